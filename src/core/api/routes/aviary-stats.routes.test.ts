// GET /aviary/stats on a real service: counts by status (zeros included), tasks added and finished
// per local day, machines, and the host's disk, CPU and memory.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../../../test/service-harness'
import { TASK_STATUSES } from '../../../shared/api/schemas'
import type { AviaryStats } from '../../../shared/api/ui-schemas'
import { formatDatetime } from '../../../shared/time'
import { localDate } from '../../status/aviary-stats.service'

const daysAgo = (n: number, hour = 12): Date => {
  const d = new Date()
  return new Date(d.getFullYear(), d.getMonth(), d.getDate() - n, hour, 30, 0)
}

describe('GET /aviary/stats', () => {
  let h: Harness
  const stats = async (query = '') => h.json<AviaryStats>(`/aviary/stats${query}`)

  beforeAll(async () => {
    h = await startHarness({
      machines: {
        driver: 'physical', resultserver: { ip: '127.0.0.1', port: 0 },
        machines: [{ name: 'p1', ip: '127.0.0.1' }, { name: 'p2', ip: '127.0.0.2' }]
      }
    })
    const add = (status: string, added: Date, completed: Date | null) =>
      h.sql(`INSERT INTO tasks (category, target, clock, added_on, completed_on, status) VALUES ('url', 'http://a.example/', ?, ?, ?, ?)`,
        formatDatetime(added), formatDatetime(added), completed && formatDatetime(completed), status)
    add('pending', daysAgo(0, 0), null)
    add('pending', daysAgo(0, 23), null)
    add('reported', daysAgo(1, 23), daysAgo(0, 0)) // added yesterday, finished today
    add('failed_analysis', daysAgo(1), daysAgo(1))
    add('running', daysAgo(1), null)
    add('completed', daysAgo(1), daysAgo(1)) // not finished: processing is still to come
    add('reported', daysAgo(40), daysAgo(40))
    h.sql(`UPDATE machines SET locked = 1 WHERE name = 'p2'`)
  })

  afterAll(async () => {
    await h?.stop()
  })

  it('counts every status, zeros included', async () => {
    const { status, body } = await stats()
    expect(status).toBe(200)
    expect(Object.keys(body.tasks.by_status).sort()).toEqual([...TASK_STATUSES].sort())
    expect(body.tasks).toEqual({
      total: 7,
      by_status: { pending: 2, running: 1, completed: 1, reported: 2, recovered: 0, failed_analysis: 1, failed_processing: 0, failed_reporting: 0 }
    })
    expect(body.machines).toEqual({ available: 1, total: 2 })
  })

  it('has one entry per local day, oldest first, zero days included; 30 by default', async () => {
    const { body } = await stats()
    expect(body.days).toHaveLength(30)
    expect(body.days.at(-1)).toEqual({ date: localDate(new Date()), added: 2, finished: 1 })
    expect(body.days.at(-2)).toEqual({ date: localDate(daysAgo(1)), added: 4, finished: 1 })
    expect(body.days[0]).toEqual({ date: localDate(daysAgo(29)), added: 0, finished: 0 })
    const week = (await stats('?days=7')).body.days
    expect(week.map((d) => d.date)).toEqual([6, 5, 4, 3, 2, 1, 0].map((n) => localDate(daysAgo(n))))
    const longer = (await stats('?days=41')).body.days
    expect(longer[0]).toEqual({ date: localDate(daysAgo(40)), added: 1, finished: 1 })
    expect(longer.reduce((n, d) => n + d.added, 0)).toBe(7)
    expect((await stats('?days=365')).body.days).toHaveLength(365)
  })

  it('reports disk of the data directory, CPU load and memory', async () => {
    const { body } = await stats()
    expect(body.disk.total).toBeGreaterThan(0)
    expect(body.disk.free).toBeGreaterThan(0)
    expect(body.disk.used + body.disk.free).toBeLessThanOrEqual(body.disk.total)
    expect(body.cpu.load).toHaveLength(3)
    expect(body.cpu.cores).toBeGreaterThanOrEqual(1)
    expect(body.memory.total).toBeGreaterThan(body.memory.free)
    expect(body.memory.free).toBeGreaterThan(0)
  })

  it('refuses a bad number of days with a 400 naming the field', async () => {
    for (const q of ['0', '366', 'ten', '1.5']) {
      const { status, body } = await h.json<{ message: string }>(`/aviary/stats?days=${q}`)
      expect(status, q).toBe(400)
      expect(body.message).toMatch(/^days: a whole number of days from 1 to 365/)
    }
  })
})
