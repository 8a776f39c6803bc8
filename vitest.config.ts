import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx', 'test/**/*.test.ts'],
    environment: 'node',
    pool: 'forks',
    // Vitest's default is one worker per core less one: a single worker on a 2-core machine, so
    // every file ran alone while most of them wait on guests, timeouts and child processes. Files
    // that share a guest take turns through its lease (test/guests/kvm/guest-lease.ts), and each
    // netns, lab and libvirt name belongs to one file (test/guests/netns-guest.ts), so files can
    // run side by side. AVIARY_TEST_WORKERS overrides it.
    maxWorkers: Number(process.env.AVIARY_TEST_WORKERS) || 4,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup-jsdom-globals.ts']
  }
})
