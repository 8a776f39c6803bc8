// Lint is where the layer rules of ARCHITECTURE.md ("Layers and what each may import") are
// enforced, for static imports (no-restricted-imports) and for import() (no-restricted-syntax:
// no-restricted-imports does not see dynamic imports). One table, LAYERS, says what each top
// folder of src/ may import of the others; everything it does not list is refused.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import globals from 'globals'

/** The top folders of src/: the layers. */
const FOLDERS = ['shared', 'guest-protocol', 'rooter', 'agent', 'core', 'dispatcher', 'main', 'preload', 'renderer']

/**
 * What each layer may import besides its own folder and npm packages: whole folders, or single
 * files as 'folder/file'. `electron` and `react` are packages only their layers may load.
 */
const LAYERS = {
  shared: { may: [], why: 'src/shared runs anywhere (service, UI, dispatcher): it imports nothing of Aviary' },
  'guest-protocol': { may: [], why: 'the guest protocol is imported by the guest and the host: it imports neither' },
  rooter: { may: ['shared/route-kinds', 'shared/setpriv'], why: 'the rooter runs as root: it imports nothing of Aviary but the route kinds table and the setpriv lookup (the service imports its protocol.ts)' },
  agent: { may: ['guest-protocol'], why: 'the agent and analyzer run inside the guest: nothing of the host side' },
  core: { may: ['shared', 'guest-protocol', 'rooter/protocol'], why: 'the headless service: no UI layer, no other program (the rooter only through its protocol.ts)' },
  dispatcher: { may: ['shared'], why: '`aviary dist` shares nothing with the analysis service but src/shared' },
  main: { may: ['core', 'shared'], electron: true, why: 'the Electron shell runs the service and the window' },
  preload: { may: ['shared'], electron: true, why: 'the preload is the typed bridge only' },
  renderer: { may: ['shared'], react: true, why: 'the renderer talks HTTP and the preload bridge only' }
}

const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
/** A regular expression for esquery: it may hold no '/', so a slash is written \x2F. */
const slash = (re) => re.replace(/\//g, '\\x2F')

/** Both rules for a layer: its static and its dynamic imports refused alike. */
function importRules(layer, { alsoDeny = [], alsoMay = [], why } = {}) {
  const l = LAYERS[layer]
  const may = [...l.may, ...alsoMay]
  const denied = FOLDERS.filter((f) => f !== layer && !may.includes(f))
  const groups = []
  const res = []
  for (const f of denied) {
    const files = may.filter((m) => m.startsWith(`${f}/`))
    // A folder excluded whole cannot have a file let back in (gitignore's rule): with allowed
    // files, the folder's contents are refused, not the folder.
    groups.push(files.length > 0 ? [`**/${f}/**`, ...files.map((m) => `!**/${m}`)] : [`**/${f}/**`, `**/${f}`])
    // ../f or ../f/x (not ../f/<an allowed file>)
    const allowed = files.map((m) => `(?!${escapeRe(m.slice(f.length + 1))}(\\.js)?$)`).join('')
    res.push(`(^|/)${escapeRe(f)}(/${allowed}|$)`)
  }
  for (const extra of alsoDeny) {
    groups.push([`**/${extra}/**`, `**/${extra}`])
    res.push(`(^|/)${escapeRe(extra)}(/|$)`)
  }
  const packages = [...(l.electron ? [] : ['electron']), ...(l.react ? [] : ['react', 'react-dom'])]
  const message = `${layer}: ${why ?? l.why} (ARCHITECTURE.md, "Layers").`
  return {
    'no-restricted-imports': ['error', {
      paths: packages.map((name) => ({ name, message })),
      patterns: [
        ...groups.map((group) => ({ group, message, caseSensitive: true })),
        ...(packages.length > 0 ? [{ group: packages.map((p) => `${p}/*`), message }] : [])
      ]
    }],
    'no-restricted-syntax': ['error',
      ...res.map((re) => ({ selector: `ImportExpression[source.value=/${slash(re)}/]`, message })),
      ...packages.map((p) => ({ selector: `ImportExpression[source.value=/^${slash(escapeRe(p))}($|\\x2F)/]`, message })),
      { selector: 'ImportExpression[source.type!="Literal"]', message: 'import() of a computed name hides a dependency from the layer rules: name the module.' }
    ]
  }
}

export default tseslint.config(
  { ignores: ['out/**', 'dist/**', 'node_modules/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error'
    }
  },
  ...Object.keys(LAYERS).map((layer) => ({ files: [`src/${layer}/**/*.{ts,tsx}`], rules: importRules(layer) })),
  {
    // The drivers run machines and never build them: the builder (src/core/builder) drives them
    // (ARCHITECTURE.md, "Machines").
    files: ['src/core/machinery/**/*.ts'],
    rules: importRules('core', { alsoDeny: ['builder'], why: 'the machinery drivers never build machines: the builder uses them, not the other way round' })
  },
  {
    // `aviary` is one program with several commands: its command line starts the dispatcher, the
    // rooter and the agent, each through import() so a command loads only its own code.
    files: ['src/core/cli.ts'],
    rules: importRules('core', { alsoMay: ['dispatcher/cli', 'rooter/cli', 'agent/index'], why: 'the command line may start the other programs by their entry files only' })
  },
  {
    files: ['src/renderer/**/*.{ts,tsx}'],
    languageOptions: { globals: { ...globals.browser } }
  },
  {
    // Tests drive real parts on both sides of a boundary (a real dispatcher behind the UI's
    // connection, the agent's strace runner feeding the core's parser): they are no layer.
    files: ['src/**/*.test.{ts,tsx}'],
    rules: { 'no-restricted-imports': 'off', 'no-restricted-syntax': 'off' }
  }
)
