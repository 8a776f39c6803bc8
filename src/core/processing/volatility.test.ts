// The optional Volatility 3 step over a full dump, against a replay stand-in for `vol`
// (test/fixtures/volatility/vol: Volatility 3 cannot be installed here; its outputs are
// transcribed, as the VirtualBox driver's are): the platform's plugins, their rows reduced to named
// fields, a failing plugin named in `errors` with the rest kept, and no step without `vol`.
import { describe, expect, it } from 'vitest'
import path from 'node:path'
import { findVol, runVolatility } from './volatility'

const VOL = path.resolve(__dirname, '../../../test/fixtures/volatility/vol')

describe('volatility step', () => {
  it('runs windows.pslist and windows.malfind on a Windows machine\'s dump', async () => {
    const v = await runVolatility('/x/memory.dmp', 'windows', { vol: VOL })
    expect(v?.plugins).toEqual(['windows.pslist.PsList', 'windows.malfind.Malfind'])
    expect(v?.errors).toEqual([])
    expect(v?.pslist).toContainEqual({ pid: 2412, ppid: 1636, name: 'sample.exe', offset: '0xfa8002f1a060', threads: 3, create_time: '2024-05-01T10:02:13+00:00', exit_time: null })
    expect(v?.malfind).toEqual([expect.objectContaining({ pid: 2412, process: 'sample.exe', start: '0x3a0000', end: '0x3a0fff', protection: 'PAGE_EXECUTE_READWRITE' })])
    expect(v?.malfind[0]?.hexdump).toMatch(/^4d 5a 90/)
  })

  it('keeps the process list when malfind fails, and says why', async () => {
    const v = await runVolatility('/x/broken.dmp', 'linux', { vol: VOL })
    expect(v?.pslist.map((p) => [p.pid, p.name, p.ppid])).toEqual([[1, 'systemd', 0], [812, 'memonly', 1]])
    expect(v?.malfind).toEqual([])
    expect(v?.errors).toEqual(['linux.malfind.Malfind: Unsatisfied requirement plugins.Malfind.kernel.symbol_table_name:'])
  })

  it('is skipped without vol on PATH, found with it', async () => {
    expect(await runVolatility('/x/memory.dmp', 'linux', { vol: null })).toBeNull()
    expect(findVol({ PATH: '/nonexistent' })).toBeNull()
    expect(findVol({ PATH: `/nonexistent${path.delimiter}${path.dirname(VOL)}` })).toBe(VOL)
  })
})
