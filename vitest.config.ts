import { defineConfig } from 'vitest/config'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

// The order files start in. Vitest starts the files it remembers as slow first, but a fresh clone
// (CI) has no memory of the last run and starts the largest files first, so a file that takes
// minutes (a QEMU build, a routed lab waiting out its samples' time limits) could start last and
// end the run minutes after everything else. These files start first, longest first, whatever
// Vitest remembers; the rest follow in Vitest's own order. Durations are from a serial run
// (docs/benchmarks.md, "The test suite"); the list only has to be roughly right.
const LONG_FILES = [
  // Builds the Linux image (cold in a fresh clone) and two machines under TCG: the longest pole.
  'test/e2e/linux-machines.test.ts',
  'test/e2e/containment.test.ts',
  'test/ui-e2e/console.e2e.test.ts',
  'test/e2e/routing-mitm.test.ts',
  'test/e2e/routing.test.ts',
  'test/dispatcher/crash-restart.test.ts',
  'test/e2e/route-fallback.test.ts',
  'test/ui-e2e/a11y.e2e.test.ts',
  'src/core/machinery/kvm.contract.test.ts',
  'src/core/api/results.test.ts',
  'test/e2e/recovery-physical.test.ts',
  'test/ui-e2e/machines-fleet.e2e.test.ts'
]

class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    const rank = (f: TestSpecification): number => {
      const i = LONG_FILES.findIndex((l) => f.moduleId.endsWith(`/${l}`))
      return i === -1 ? LONG_FILES.length : i
    }
    // Array.prototype.sort is stable: files outside the list keep Vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b))
  }
}


// Files under src/ that need a process of their own: they use libvirt (its test driver keeps
// domains per process, so another file's would show in their listings) or check which modules a
// file loads. Run in one shared process, drivers.test.ts and windows/create.test.ts failed.
const ISOLATED_SRC = [
  'src/core/machinery/kvm.contract.test.ts',
  'src/core/machinery/drivers.test.ts',
  'src/core/doctor/doctor.test.ts',
  'src/core/api/routes/aviary-machines.routes.test.ts',
  'src/core/api/routes/aviary-machine-builds.routes.test.ts',
  'src/core/builder/libvirt-xml.test.ts',
  'src/core/builder/linux-cli.test.ts',
  'src/core/builder/setup.test.ts',
  'src/core/builder/windows/domain-xml.test.ts',
  'src/core/builder/windows/create.test.ts',
  'src/core/fleet/prepare-console.test.ts',
  'src/core/console/rfb-client-filter.test.ts'
]

export default defineConfig({
  test: {
    environment: 'node',
    pool: 'forks',
    // Vitest's default is one worker per core less one: a single worker on a 2-core machine, so
    // every file ran alone while most of them wait on guests, timeouts and child processes. Files
    // that share a guest take turns through its lease (test/guests/kvm/guest-lease.ts), and each
    // netns, lab and libvirt name belongs to one file (test/guests/netns-guest.ts), so files can
    // run side by side. Three at a time: most files under test/ wait on guests and samples, and at
    // two the cores were idle a fifth of the run; at three they are busy 94% of it, and `npm test`
    // took 16–18 min against 19 min 41 s at two (docs/benchmarks.md, "Temporary files in memory,
    // and three files at a time"). The limits three missed there were fixed; four saturated the
    // cores and missed more. AVIARY_TEST_WORKERS overrides it.
    maxWorkers: Number(process.env.AVIARY_TEST_WORKERS) || 3,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    globalSetup: ['test/global-setup.ts'],
    // Vitest keeps the modules it transformed in node_modules/.vite/vitest, keyed by their
    // content, so a second run transforms only what changed (8 route files: transform 4.5 s → 0.9 s).
    experimental: { fsModuleCache: true },
    setupFiles: ['test/setup-jsdom-globals.ts', 'test/setup-cpu-map.ts'],
    // The files that take minutes start first, in a fresh clone too (LongFirstSequencer above).
    sequence: { sequencer: LongFirstSequencer },
    projects: [
      {
        // The unit and component tests under src/ share their worker's module cache (isolate:
        // false): each file no longer imports Fastify, React, TypeBox and the service afresh. On
        // this 2-core machine `vitest run src` took 533 s and 988 CPU-seconds isolated, 435 s and
        // 783 shared, all 177 files passing both ways. A file there must leave no global state
        // behind (environment variables, timers, servers), as each already cleans up after itself.
        extends: true,
        test: { name: 'unit', include: ['src/**/*.test.ts', 'src/**/*.test.tsx'], exclude: ISOLATED_SRC, isolate: false, setupFiles: ['src/renderer/src/test-setup.ts'] }
      },
      {
        // Guests, labs, browsers, the built programs and libvirt: each file in a process of its own.
        extends: true,
        test: { name: 'isolated', include: ['test/**/*.test.ts', ...ISOLATED_SRC] }
      }
    ]
  }
})
