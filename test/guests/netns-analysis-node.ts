// An analysis instance with one real machine: a netns guest running `aviary agent`, driven by the
// physical driver, with capture on the guest's veth and no screenshots (a namespace has no
// screen). What the end-to-end, UI and dispatcher tests that run a real analysis start with.
import path from 'node:path'
import { createNetnsGuest, type NetnsGuest } from './netns-guest'
import { startHarness, type Harness } from '../service-harness'

export async function startNetnsAnalysisNode(o: { index: number; prefix: string; tags?: string[] }): Promise<{ guest: NetnsGuest; h: Harness }> {
  const guest = await createNetnsGuest({ index: o.index, prefix: o.prefix })
  try {
    await guest.startAgent([process.execPath, path.resolve('bin/aviary.js'), 'agent', '-H', '0.0.0.0', '-p', '8000'])
    const h = await startHarness({
      engine: true,
      machines: {
        driver: 'physical',
        interface: guest.hostIf,
        resultserver: { ip: guest.hostIp, port: 0 },
        screenshots: { interval: 0 },
        machines: [{ name: `netns${o.index}`, ip: guest.guestIp, platform: 'linux', ...(o.tags ? { tags: o.tags } : {}) }]
      }
    })
    return { guest, h }
  } catch (err) {
    await guest.close()
    throw err
  }
}
