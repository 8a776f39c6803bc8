// Defensive reads of a Cuckoo 2 report: it is built from what a hostile guest sent, or comes from
// a server we do not control, so any key may be missing or of the wrong type. These return an
// empty value instead of throwing. Shared by the core's report-view.ts (signatures, HTML report)
// and the renderer's report/model.ts, which add their own string readers on top.

export type Obj = Record<string, unknown>

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** `root[a][b]...` as an object, or {} when any step is missing or not an object. */
export function obj(root: unknown, ...keys: string[]): Obj {
  let cur: unknown = root
  for (const k of keys) cur = isObj(cur) ? cur[k] : undefined
  return isObj(cur) ? cur : {}
}

/** `root[a][b]...` whatever it is (undefined when a step is missing); `root` itself for no keys. */
export function valueAt(root: unknown, keys: string[]): unknown {
  if (keys.length === 0) return root
  return obj(root, ...keys.slice(0, -1))[keys[keys.length - 1] as string]
}

/** `root[a][b]...` as an array of objects (other items dropped), or []. */
export function objs(root: unknown, ...keys: string[]): Obj[] {
  const v = valueAt(root, keys)
  return Array.isArray(v) ? v.filter(isObj) : []
}
