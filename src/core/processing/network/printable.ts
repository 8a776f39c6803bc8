// Cuckoo's convert_to_printable (cuckoo/common/utils.py): bytes become text, every byte that is not
// printable ASCII (letters, digits, punctuation, space, \t, \r, \n) becomes the four characters
// `\xNN`. Report fields built from packet bytes (HTTP data, ICMP data) go through it, so a report
// consumer sees the same strings Cuckoo would have written.

export function toPrintable(b: Buffer, start = 0, end = b.length): string {
  let plain = true
  for (let i = start; i < end; i++) {
    const c = b[i]!
    if ((c < 0x20 || c > 0x7e) && c !== 0x09 && c !== 0x0a && c !== 0x0d) { plain = false; break }
  }
  if (plain) return b.toString('latin1', start, end)
  let out = ''
  for (let i = start; i < end; i++) {
    const c = b[i]!
    out += (c < 0x20 || c > 0x7e) && c !== 0x09 && c !== 0x0a && c !== 0x0d
      ? `\\x${c.toString(16).padStart(2, '0')}`
      : String.fromCharCode(c)
  }
  return out
}
