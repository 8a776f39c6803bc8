// ELECTRON STAND-IN: a Node module resolve hook (node:module register) that answers the bare
// specifier `electron` with electron.mjs, for modules under the folder given at registration
// (the built main bundle) and nowhere else.
let scope = null
let target = null

export function initialize(data) {
  scope = data.scope
  target = data.target
}

export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'electron' && scope && context.parentURL?.startsWith(scope)) return { url: target, shortCircuit: true }
  return nextResolve(specifier, context)
}
