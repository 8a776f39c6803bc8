// The calls sources without a DOM: what a hostile server's listing and pages become, the report's
// calls filtered in slices (the page's other work runs between them), and the page cache holding
// a bounded number of pages and cancelling the ones scrolled past.
import { describe, expect, it } from 'vitest'
import { CallPages, callMatcher, callsQuery, parseListing, parsePage, reportCallsSource, type CallFilter, type CallsSource } from './calls-source'

const all: CallFilter = { categories: [], api: '', q: '' }

describe('what the server sends, checked', () => {
  it('keeps sane processes and counts from a hostile listing', () => {
    expect(parseListing(null)).toEqual([])
    expect(parseListing({ processes: 'many' })).toEqual([])
    const out = parseListing({
      processes: [
        { pid: 1.5, calls: 3 }, 'x', null, { pid: '12', calls: 3 },
        { pid: 7, process_name: 'a'.repeat(10_000), calls: -4, dropped: Number.NaN, categories: { file: 'lots', net: 2.7 }, apis: [1, 2] },
        { pid: 8, process_name: 42, calls: 1e6, dropped: 3, categories: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`c${i}`, i])) }
      ]
    })
    expect(out.map((p) => p.pid)).toEqual([7, 8])
    expect(out[0]).toMatchObject({ calls: 0, dropped: 0, categories: { file: 0, net: 2 }, apis: {} })
    expect(out[0]?.process_name).toHaveLength(4096)
    expect(out[1]).toMatchObject({ process_name: '', calls: 1e6, dropped: 3 })
    expect(Object.keys(out[1]?.categories ?? {})).toHaveLength(2000)
  })

  it('cuts a page to the limit, turns non-objects into empty rows, and never reports fewer rows than it holds', () => {
    const page = parsePage({ total: 1, calls: [{ api: 'a' }, 3, null, { api: 'b' }] }, 100, 3)
    expect(page).toEqual({ total: 103, offset: 100, calls: [{ api: 'a' }, {}, {}] })
    expect(parsePage('nonsense', 0, 200)).toEqual({ total: 0, offset: 0, calls: [] })
    expect(parsePage({ total: -5, calls: {} }, 0, 200).total).toBe(0)
  })

  it('asks with the contract\'s parameters, the limit at most 1,000', () => {
    const q = new URLSearchParams(callsQuery(12, { categories: ['file', 'network'], api: 'openat', q: 'a&b=c' }, 400, 5000).split('?')[1])
    expect(Object.fromEntries(q)).toEqual({ offset: '400', limit: '1000', category: 'file,network', api: 'openat', q: 'a&b=c' })
    expect(callsQuery(12, all, 0, 200)).toBe('12?offset=0&limit=200')
  })
})

describe('calls from a report', () => {
  const calls = Array.from({ length: 200_000 }, (_, i) => ({
    category: i % 2 ? 'file' : 'process', api: i % 2 ? 'openat' : 'execve',
    arguments: { path: i === 123_457 ? '/home/u/.ssh/ID_RSA' : `/tmp/${i}`, nested: { deep: { deeper: { deepest: 'needle' } } } },
    return_value: i, status: true
  }))
  const report = { behavior: { processes: [{ pid: 5, process_name: 'sh', calls_seen: 200_017, calls_kept: 200_000, calls }, { pid: 5, calls: [{}] }, { pid: 'x', calls }] } }

  it('lists the processes with calls, counting categories and APIs', async () => {
    const listing = await reportCallsSource(report).listing()
    expect(listing).toEqual({ origin: 'report', processes: [{ pid: 5, process_name: 'sh', calls: 200_000, dropped: 17, categories: { process: 100_000, file: 100_000 }, apis: { execve: 100_000, openat: 100_000 } }] })
  })

  it('filters and searches (case-insensitive, in arguments), in slices that let the page run between them', async () => {
    const src = reportCallsSource(report)
    let ticked = false
    setTimeout(() => { ticked = true }, 0)
    const files = await src.page(5, { categories: ['file'], api: '', q: '' }, 0, 3)
    expect(ticked).toBe(true)
    expect(files.total).toBe(100_000)
    expect(files.calls.map((c) => c.index)).toEqual([1, 3, 5])
    const found = await src.page(5, { categories: [], api: '', q: 'id_rsa' }, 0, 10)
    expect(found.total).toBe(1)
    expect(found.calls[0]?.index).toBe(123_457)
    // Three levels into arguments are searched, not deeper (a hostile call cannot make a search walk forever).
    expect((await src.page(5, { categories: [], api: 'execve', q: 'needle' }, 0, 1)).total).toBe(0)
    // A page past the end is empty; an unknown pid has no calls.
    expect((await src.page(5, { categories: ['file'], api: '', q: '' }, 100_000, 200)).calls).toEqual([])
    expect(await src.page(6, all, 0, 10)).toEqual({ total: 0, offset: 0, calls: [] })
  })

  it('matches hostile calls without throwing', () => {
    const cyclic: Record<string, unknown> = { a: 'x' }
    cyclic.self = cyclic
    const m = callMatcher({ categories: [], api: '', q: 'zzz' })
    expect(m(null)).toBe(false)
    expect(m({ arguments: cyclic })).toBe(false)
    expect(m({ arguments: { list: Array.from({ length: 10_000 }, () => 'a') } })).toBe(false)
    expect(callMatcher({ categories: [], api: '', q: '(' })({ api: 'f(' })).toBe(true)
  })
})

describe('pages of calls', () => {
  /** A source of `total` calls that records what was asked and what was cancelled. */
  function counting(total: number) {
    const asked: number[] = []
    const cancelled: number[] = []
    const src: CallsSource = {
      listing: async () => ({ origin: 'service', processes: [] }),
      page: (_pid, _f, offset, limit, signal) => new Promise((resolve, reject) => {
        asked.push(offset)
        signal?.addEventListener('abort', () => { cancelled.push(offset); reject(new Error('aborted')) })
        setTimeout(() => resolve({ total, offset, calls: Array.from({ length: Math.min(limit, total - offset) }, (_, i) => ({ index: offset + i })) }), 1)
      })
    }
    return { src, asked, cancelled }
  }

  it('holds at most maxPages pages, however far the view scrolls, and cancels pages scrolled past', async () => {
    const { src, asked, cancelled } = counting(1_000_000)
    const pages = new CallPages(src, 1, all, { pageSize: 100, maxPages: 8 })
    pages.want(0, 30)
    await new Promise((r) => setTimeout(r, 20))
    expect(pages.total).toBe(1_000_000)
    expect(pages.row(30)).toEqual({ index: 30 })
    for (let at = 0; at < 50_000; at += 1000) {
      pages.want(at, at + 30)
      await new Promise((r) => setTimeout(r, 10))
      expect(pages.row(at + 5)).toEqual({ index: at + 5 })
    }
    expect(pages.held).toBeLessThanOrEqual(8)
    // Moving on before a page arrives cancels it.
    pages.want(900_000, 900_030)
    pages.want(10, 40)
    await new Promise((r) => setTimeout(r, 10))
    expect(cancelled).toContain(900_000)
    expect(pages.row(900_001)).toBeUndefined()
    expect(pages.row(11)).toEqual({ index: 11 })
    // One request per page that came into view, none for pages between; page 0 again, as it had been let go.
    expect(asked).toEqual([...Array.from({ length: 50 }, (_, i) => i * 1000), 900_000, 0])
    pages.dispose()
  })
})
