// Fires when a PE section of the sample has near-random content (entropy above 7.2 bits per byte
// over a non-trivial size): the usual sign of a packed or encrypted payload.
import type { SignatureRule } from '../signature'
import { objs, str, type Obj } from '../../../reporting/report-view'

const ENTROPY = 7.2
const MIN_SIZE = 1024

/** A section field as a number: Cuckoo writes sizes as hex strings ("0x00002000"), some tools as numbers. */
function field(s: Obj, key: string): number | null {
  const v = s[key]
  if (typeof v === 'number') return Number.isFinite(v) ? v : null
  if (typeof v !== 'string' || v.trim() === '') return null
  const n = /^0x[0-9a-f]+$/i.test(v.trim()) ? parseInt(v, 16) : Number(v)
  return Number.isFinite(n) ? n : null
}

export const packedSection: SignatureRule = {
  name: 'packed_section',
  description: 'The sample has a high-entropy section, likely packed or encrypted',
  severity: 2,
  categories: ['packer'],
  ttp: ['T1027.002'],
  run(report, mark) {
    for (const s of objs(report, 'static', 'pe_sections')) {
      const entropy = field(s, 'entropy')
      const size = field(s, 'size_of_data')
      // A section without a known size counts: its entropy was measured over whatever it holds.
      if (entropy !== null && entropy > ENTROPY && (size === null || size >= MIN_SIZE)) {
        mark.generic({ section: str(s, 'name'), entropy, size_of_data: size })
      }
    }
  }
}
