// The dispatcher's mark in a node task's options: appended to what the submitter sent, and read back
// from options as Aviary and Cuckoo 1.x list them (a string) and as Cuckoo 2.0.7 does (an object).
import { describe, expect, it } from 'vitest'
import { markerOf, MARKER_ROOM, newMarker, setsMarker, withMarker } from './marker'

const M = newMarker(123)

describe('the mark in options', () => {
  it('is the task id and 32 random hex digits, and fits the room kept for it', () => {
    expect(M).toMatch(/^123-[0-9a-f]{32}$/)
    expect(newMarker(123)).not.toBe(M)
    expect(`,aviary_dist=${newMarker(999_999_999_999_999)}`.length).toBeLessThanOrEqual(MARKER_ROOM)
  })

  it("is appended to the submitter's options, keeping them as sent", () => {
    expect(withMarker(null, M)).toBe(`aviary_dist=${M}`)
    expect(withMarker('', M)).toBe(`aviary_dist=${M}`)
    expect(withMarker('route=internet, procmemdump=yes', M)).toBe(`route=internet, procmemdump=yes,aviary_dist=${M}`)
    // One the submitter set (older tasks: the API refuses it now) is replaced, not left to compete.
    expect(withMarker(`aviary_dist=1-${'0'.repeat(32)},free=yes`, M)).toBe(`free=yes,aviary_dist=${M}`)
    expect(setsMarker(' aviary_dist = x')).toBe(true)
    expect(setsMarker('route=none,aviary_distance=3')).toBe(false)
    expect(setsMarker(null)).toBe(false)
  })

  it('is read back as Aviary and Cuckoo 1.x list options (a string: the last piece wins, as in their parsers)', () => {
    expect(markerOf(withMarker('route=none', M))).toBe(M)
    expect(markerOf(`aviary_dist=1-${'0'.repeat(32)}, aviary_dist = ${M} `)).toBe(M)
    expect(markerOf('route=none')).toBeNull()
    expect(markerOf('')).toBeNull()
  })

  it('is read back as Cuckoo 2.0.7 lists options (an object)', () => {
    expect(markerOf({ procmemdump: 'yes', aviary_dist: M })).toBe(M)
    expect(markerOf({})).toBeNull()
  })

  it('is none when a node sends anything else', () => {
    for (const bad of [null, undefined, 7, [`aviary_dist=${M}`], { aviary_dist: 7 }, { aviary_dist: `${M}0` }, `aviary_dist=${M.toUpperCase()}`,
      'aviary_dist=0-' + '0'.repeat(32), `aviary_dist=${M},aviary_dist=`]) {
      expect(markerOf(bad), JSON.stringify(bad)).toBeNull()
    }
  })
})
