// ELECTRON STAND-IN: an import() that is Node's own. Loaded with require (createRequire), which
// Vitest does not rewrite, so the main bundle it imports is loaded as Electron loads it, through
// Node's loader and the resolve hook of hooks.mjs.
module.exports = (url) => import(url)
