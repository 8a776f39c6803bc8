// One scale for an analysis's score (0–10), shared by the app's badges, the task list and
// report.html, so a score reads the same everywhere. A sandbox's score never proves a sample
// harmless, so no level is drawn as "safe" (green): 0 only means no signature fired.
export type ScoreLevel = 'none' | 'low' | 'medium' | 'high'

export const SCORE_LEVELS: readonly { level: ScoreLevel; from: number; words: string }[] = [
  { level: 'none', from: 0, words: 'no signature fired' },
  { level: 'low', from: Number.MIN_VALUE, words: 'low' },
  { level: 'medium', from: 2, words: 'medium' },
  { level: 'high', from: 5, words: 'high' }
]

/** The level of a score: 0 (or less) none, below 2 low, below 5 medium, then high. */
export function scoreLevel(score: number): ScoreLevel {
  if (!(score > 0)) return 'none'
  return score >= 5 ? 'high' : score >= 2 ? 'medium' : 'low'
}

/** The level in words, for a title or a screen reader (colour is never the only signal). */
export function scoreWords(score: number): string {
  const level = scoreLevel(score)
  return SCORE_LEVELS.find((l) => l.level === level)!.words
}
