// A small XML writer for the two documents this folder makes (Autounattend.xml and a libvirt
// domain). Documents are built as trees and serialised here, so every text and attribute value
// passes through one escape: no value can close an element, open a comment or a CDATA section, or
// end an attribute, whatever it holds.

export interface XmlElement {
  name: string
  attrs?: Record<string, string>
  children?: XmlNode[]
}
export type XmlNode = XmlElement | string

/** `<name attrs>children</name>`; a string child is text. */
export function el(name: string, attrs: Record<string, string> | null, ...children: (XmlNode | null | false)[]): XmlElement {
  return { name, ...(attrs ? { attrs } : {}), children: children.filter((c): c is XmlNode => c !== null && c !== false) }
}

/** An element holding only text: `<name>text</name>`. */
export function text(name: string, value: string | number | boolean, attrs: Record<string, string> | null = null): XmlElement {
  return el(name, attrs, String(value))
}

// XML 1.0 allows tab, newline and carriage return of the C0 controls; the rest cannot appear even
// escaped. Callers validate first (options.ts); this is the last line of defence.
// eslint-disable-next-line no-control-regex
const NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/

export class XmlValueError extends Error {}

export function escapeXml(value: string): string {
  if (NOT_XML.test(value)) throw new XmlValueError('a value holds a control character XML cannot carry')
  // `>` is escaped too: `]]>` is not allowed in text, and attributes read more plainly this way.
  // Carriage returns and tabs become references so an attribute keeps them (attribute-value
  // normalisation would turn them into spaces).
  return value.replace(/[&<>"'\r\t]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;', '\r': '&#13;', '\t': '&#9;' })[c]!)
}

const NAME = /^[A-Za-z_][A-Za-z0-9_.:-]*$/

function serialise(node: XmlNode, depth: number, indent: string, out: string[]): void {
  const pad = indent.repeat(depth)
  if (typeof node === 'string') {
    out.push(pad + escapeXml(node))
    return
  }
  if (!NAME.test(node.name)) throw new XmlValueError(`'${node.name}' is not an element name`)
  const attrs = Object.entries(node.attrs ?? {}).map(([k, v]) => {
    if (!NAME.test(k)) throw new XmlValueError(`'${k}' is not an attribute name`)
    return ` ${k}="${escapeXml(v)}"`
  }).join('')
  const children = node.children ?? []
  if (children.length === 0) {
    out.push(`${pad}<${node.name}${attrs}/>`)
  } else if (children.length === 1 && typeof children[0] === 'string') {
    // Text on the element's own line: whitespace around a value would be part of the value.
    out.push(`${pad}<${node.name}${attrs}>${escapeXml(children[0])}</${node.name}>`)
  } else {
    out.push(`${pad}<${node.name}${attrs}>`)
    for (const c of children) serialise(c, depth + 1, indent, out)
    out.push(`${pad}</${node.name}>`)
  }
}

/** The document, with an XML declaration when `declaration` is set; LF line ends, a final newline. */
export function toXml(root: XmlElement, o: { declaration?: boolean; indent?: string } = {}): string {
  const out: string[] = []
  if (o.declaration) out.push('<?xml version="1.0" encoding="utf-8"?>')
  serialise(root, 0, o.indent ?? '  ', out)
  return out.join('\n') + '\n'
}
