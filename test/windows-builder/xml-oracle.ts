// An XML parser that is not ours: Python's xml.etree reads a document the builder wrote and gives
// back its elements as a tree, so tests check what a conforming parser (and so Windows Setup or
// libvirt) reads, not what our own writer meant to write.
import { execFileSync } from 'node:child_process'

export interface ParsedElement {
  /** The tag without its namespace. */
  tag: string
  attrs: Record<string, string>
  text: string
  children: ParsedElement[]
}

const SCRIPT = `
import json, sys, xml.etree.ElementTree as ET
def conv(e):
    return {"tag": e.tag.split("}")[-1], "attrs": {k.split("}")[-1]: v for k, v in e.attrib.items()},
            "text": (e.text or "").strip(), "children": [conv(c) for c in e]}
print(json.dumps(conv(ET.fromstring(sys.stdin.buffer.read()))))
`

export function parseXml(xml: string): ParsedElement {
  return JSON.parse(execFileSync('python3', ['-c', SCRIPT], { input: xml, encoding: 'utf8' })) as ParsedElement
}

/** Every element whose tag path (from below the root, `/`-joined) ends with `suffix`. */
export function findAll(root: ParsedElement, suffix: string): ParsedElement[] {
  const out: ParsedElement[] = []
  const walk = (e: ParsedElement, at: string): void => {
    const p = at ? `${at}/${e.tag}` : e.tag
    if (p === suffix || p.endsWith(`/${suffix}`)) out.push(e)
    for (const c of e.children) walk(c, p)
  }
  walk(root, '')
  return out
}

export function findOne(root: ParsedElement, suffix: string): ParsedElement {
  const all = findAll(root, suffix)
  if (all.length !== 1) throw new Error(`${all.length} elements end with ${suffix}`)
  return all[0]!
}
