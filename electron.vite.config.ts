// Build of the desktop shell: the main process (with the headless service and its hashing
// worker), the sandboxed preload script and the React renderer. Output goes to out/main,
// out/preload and out/renderer; package.json's "main" points at out/main/index.js.
import { resolve } from 'node:path'
import { defineConfig } from 'electron-vite'
import react from '@vitejs/plugin-react'
import tailwindcss from '@tailwindcss/vite'

export default defineConfig({
  main: {
    build: {
      // Dependencies (fastify, better-sqlite3, wasmagic, ...) stay in node_modules and are
      // resolved at run time, so native modules and wasm assets sit where they expect to be.
      externalizeDeps: true,
      rolldownOptions: {
        input: {
          index: resolve('src/main/index.ts'),
          // The core looks for `hash.worker.mjs` next to the running bundle.
          'hash.worker': resolve('src/core/hashing/hash.worker.ts')
        },
        output: {
          entryFileNames: (chunk) => (chunk.name === 'hash.worker' ? '[name].mjs' : '[name].js'),
          // The worker shares a chunk with index.js. A packaged app runs the worker and that chunk
          // from app.asar.unpacked, where package.json's "type" is not visible: .mjs keeps them ESM.
          chunkFileNames: 'chunks/[name]-[hash].mjs'
        }
      }
    }
  },
  preload: {
    build: {
      rolldownOptions: {
        input: { index: resolve('src/preload/index.ts') },
        // Sandboxed preload scripts cannot be ES modules: emit CommonJS whatever package.json says.
        output: { format: 'cjs', entryFileNames: '[name].cjs' }
      }
    }
  },
  renderer: {
    root: resolve('src/renderer'),
    // Relative asset URLs: the page is served from the app:// protocol (see src/main/protocol.ts).
    base: './',
    build: {
      // Minified: the page's first paint waits for its script (bench/ui-tasks.bench.mjs).
      minify: true,
      rolldownOptions: { input: { index: resolve('src/renderer/index.html') } }
    },
    plugins: [react(), tailwindcss()]
  }
})
