// Commit subjects are at most 72 characters, the reasons in the body (README, "Contributing").
// Checked over the history since the rule was enforced (BASELINE: the commit before this test);
// older subjects are left as they are, since rewriting landed history would break every clone.
// A clone too shallow to hold BASELINE checks the commits it has.
import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'

const BASELINE = '8e8d9ab'
const git = (...args: string[]): string => execFileSync('git', args, { encoding: 'utf8' })

describe('commit subjects', () => {
  it('are at most 72 characters since the rule was enforced', () => {
    let range = 'HEAD'
    try {
      git('cat-file', '-e', `${BASELINE}^{commit}`)
      range = `${BASELINE}..HEAD`
    } catch {
      // Shallow clone without the baseline: every commit present is newer than the rule.
    }
    const subjects = git('log', '--no-merges', '--format=%h %s', range).split('\n').filter(Boolean)
    const long = subjects.filter((l) => [...l.slice(l.indexOf(' ') + 1)].length > 72)
    expect(long).toEqual([])
  })

  it('the commit-msg hook refuses a long subject and takes a short one', () => {
    const hook = '.githooks/commit-msg'
    const run = (subject: string): number => {
      try {
        execFileSync('sh', ['-c', `f=$(mktemp) && printf '%s\\n\\nbody\\n' "$1" > "$f" && ${hook} "$f"; r=$?; rm -f "$f"; exit $r`, 'sh', subject], { stdio: 'ignore' })
        return 0
      } catch (e) {
        return (e as { status: number }).status
      }
    }
    expect(run('x'.repeat(72))).toBe(0)
    expect(run('x'.repeat(73))).toBe(1)
  })
})
