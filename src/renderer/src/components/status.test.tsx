// @vitest-environment jsdom
// The score badge follows the one scale of the app, the HTML report and the task list
// (src/shared/score.ts): only a score of 0 is neutral, and no score is ever drawn as "safe".
import { afterEach, describe, expect, it } from 'vitest'
import { cleanup, render } from '@testing-library/react'
import { ScoreBadge } from './status'

afterEach(cleanup)

const levelOf = (score: number) => (render(<ScoreBadge score={score} />).container.firstElementChild as HTMLElement)

describe('ScoreBadge', () => {
  it('draws a dropper\'s 1.2 as a low finding, not in green, and says the level in words', () => {
    const badge = levelOf(1.2)
    expect(badge.dataset.level).toBe('low')
    expect(badge.className).not.toMatch(/emerald|green/)
    expect(badge.getAttribute('title')).toBe('score 1.2 of 10: low')
  })

  it('keeps the same thresholds as the HTML report: 0 none, below 2 low, below 5 medium, then high', () => {
    expect([0, 0.5, 1.9, 2, 4.9, 5, 10].map((s) => { const l = levelOf(s).dataset.level; cleanup(); return l }))
      .toEqual(['none', 'low', 'low', 'medium', 'medium', 'high', 'high'])
  })
})
