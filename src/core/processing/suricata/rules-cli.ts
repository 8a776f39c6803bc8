// `aviary rules list | import FILE | remove NAME`: the IDS step's rule sets in a data folder
// (rulesets.ts). They work on the folder's files directly, also while a service runs on it: an
// import is swapped in whole, and each task's processing lists the sets afresh.
import type { Command } from 'commander'
import { createLayout } from '../../storage/layout'
import { defaultDataDir } from '../../config'
import type { RuleSet } from './rulesets'
import { loadSuricataSettings, RuleImportError } from './settings'

// Loaded when a `rules` command runs: `aviary serve` never needs the archive reader.
const load = async () => ({ ...(await import('./rulesets')), ...(await import('../../doctor/ids-check')) })

const DATA = ['--data <dir>', 'data directory (default: $AVIARY_DATA or the per-user data directory)'] as const

function describe(s: RuleSet, age: (t: number, now: number) => string, now = Date.now()): string {
  const what = s.kind === 'imported' ? `imported ${age(s.updated, now)} ago from ${s.source ?? '?'}` : `${s.kind}, updated ${age(s.updated, now)} ago`
  return `${s.name.padEnd(20)} ${String(s.rules).padStart(7)} rules  ${what}`
}

export function rulesCommand(program: Command, done: (code: number) => void): void {
  const rules = program.command('rules').description("the IDS's rule sets: Debian's protocol rules, Aviary's own, and those you import (ET Open/ET Pro)")
  const dirOf = (o: { data?: string }): string => createLayout(o.data ?? defaultDataDir()).suricata
  const fail = (err: unknown): void => {
    process.stderr.write(`aviary rules: ${(err as Error).message}\n`)
    done(err instanceof RuleImportError ? 2 : 1)
  }
  rules.command('list').description('every rule set the IDS step loads, with its rule count and age')
    .option(...DATA).option('--json', 'print JSON')
    .action(async (o: { data?: string; json?: boolean }) => {
      try {
        const { listRuleSets, age } = await load()
        const dir = dirOf(o)
        const sets = listRuleSets(dir, { bundledRules: loadSuricataSettings(dir).bundledRules })
        process.stdout.write(o.json ? JSON.stringify(sets.map(({ files, ...s }) => ({ ...s, files: files.length })), null, 2) + '\n'
          : sets.length === 0 ? 'no rule sets\n' : sets.map((s) => describe(s, age)).join('\n') + '\n')
        done(0)
      } catch (err) { fail(err) }
    })
  rules.command('import').description('import an ET Open/ET Pro tarball (its rules/*.rules) or a .rules file as a rule set')
    .argument('<file>', 'a .tar.gz, .tgz, .tar or .rules file')
    .option('--name <name>', 'the set\'s name (default: the file\'s, e.g. emerging.rules.tar.gz → emerging)')
    .option('--replace', 'replace a set of that name (a newer download of it)')
    .option(...DATA)
    .action(async (file: string, o: { name?: string; replace?: boolean; data?: string }) => {
      try {
        const { importRuleSet } = await load()
        const r = await importRuleSet(dirOf(o), file, { fileName: file, ...(o.name !== undefined ? { name: o.name } : {}), replace: o.replace === true })
        process.stdout.write(`${r.replaced ? 'replaced' : 'imported'} ${r.set.name}: ${r.set.rules} rules in ${r.set.files.length} files\n`)
        done(0)
      } catch (err) { fail(err) }
    })
  rules.command('remove').description('remove an imported rule set').argument('<name>').option(...DATA)
    .action(async (name: string, o: { data?: string }) => {
      try {
        const { removeRuleSet } = await load()
        if (await removeRuleSet(dirOf(o), name)) { process.stdout.write(`removed ${name}\n`); done(0) }
        else { process.stderr.write(`aviary rules: no imported rule set named ${name}\n`); done(1) }
      } catch (err) { fail(err) }
    })
}
