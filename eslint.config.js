// Lint is where the layer rules of ARCHITECTURE.md are enforced: the headless core and the
// shared code never reach for Electron, React or the DOM, and nothing below the UI imports it.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import globals from 'globals'

const uiOnly = ['electron', 'electron/*', 'react', 'react/*', 'react-dom', 'react-dom/*']
const uiFolders = ['**/main/**', '**/preload/**', '**/renderer/**']

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
  {
    files: ['src/core/**/*.ts', 'src/shared/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: uiOnly.filter((p) => !p.includes('*')).map((name) => ({
            name,
            message: 'src/core and src/shared run without a window: no Electron, React or DOM here.'
          })),
          patterns: [
            { group: uiOnly.filter((p) => p.includes('*')), message: 'No Electron or React in core/shared.' },
            { group: uiFolders, message: 'Dependencies point down: core/shared never import the UI layers.' }
          ]
        }
      ]
    }
  },
  {
    // The drivers run machines and never build them: the builder (src/core/builder) drives them
    // (ARCHITECTURE.md, "Machines"). The core's own rules, plus that one.
    files: ['src/core/machinery/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: uiOnly.filter((p) => !p.includes('*')).map((name) => ({ name, message: 'src/core runs without a window.' })),
          patterns: [
            { group: uiOnly.filter((p) => p.includes('*')), message: 'No Electron or React in core/shared.' },
            { group: uiFolders, message: 'Dependencies point down: core/shared never import the UI layers.' },
            { group: ['**/builder/**', '**/builder'], message: 'The machinery drivers never build machines: the builder uses them, not the other way round.' }
          ]
        }
      ]
    }
  },
  {
    files: ['src/shared/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: uiOnly.filter((p) => !p.includes('*')).map((name) => ({ name, message: 'shared runs anywhere.' })),
          patterns: [{ group: [...uiFolders, '**/core/**'], message: 'shared depends on nothing above it.' }]
        }
      ]
    }
  },
  {
    // `aviary dist` shares nothing with the analysis service but src/shared (ARCHITECTURE.md).
    files: ['src/dispatcher/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/core/**', '**/core', ...uiFolders, ...uiOnly], message: 'src/dispatcher imports only src/shared (and its own files), never src/core or the UI.' }] }
      ]
    }
  },
  {
    // The agent protocol, shared by the guest's agent and analyzer and the host: it runs on both
    // sides, so it imports nothing but Node's built-ins.
    files: ['src/guest-protocol/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/core/**', '**/shared/**', '**/agent/**', '**/dispatcher/**', '**/main/**', '**/renderer/**', 'electron'], message: 'The guest protocol is imported by both the guest and the host: it imports neither.' }] }
      ]
    }
  },
  {
    // The root helper runs as root: the less it imports, the less runs with root's rights.
    files: ['src/rooter/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/core/**', '**/shared/**', '**/agent/**', '**/dispatcher/**', '**/guest-protocol/**', '**/main/**', '**/renderer/**', 'electron'], message: 'The rooter imports nothing of the rest of Aviary (the service imports its protocol.ts).' }] }
      ]
    }
  },
  {
    files: ['src/agent/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/core/**', '**/shared/**', '**/main/**', '**/renderer/**', 'electron'], message: 'The agent and analyzer run inside the guest: they import nothing of Aviary\'s host side (src/guest-protocol is shared).' }] }
      ]
    }
  },
  {
    files: ['src/renderer/**/*.{ts,tsx}'],
    languageOptions: { globals: { ...globals.browser } },
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/core/**', '**/main/**', 'electron'], message: 'The renderer talks HTTP and the preload bridge only.' }] }
      ]
    }
  }
)
