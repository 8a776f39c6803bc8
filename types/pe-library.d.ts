// The part of pe-library's types Aviary uses (its header classes, `Format`). The package's own
// index.d.ts also brings util/functions.d.ts, which says `/// <reference lib="dom" />` and would
// pull the browser's globals into the whole Node program; tsconfig.node.json maps the package's
// types here instead. At run time the real package is loaded as usual.
export * as Format from '../node_modules/pe-library/dist/format/index.js'
