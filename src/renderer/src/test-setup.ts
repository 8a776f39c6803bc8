// Setup for the component tests (the Vitest project `unit`, vitest.config.ts). It lives with the
// renderer because it is typed against the DOM, as those tests are.
//
// findBy* and waitFor give up after 1 s by default. The component tests wait on a real service in
// the same process, and with three other test files on two cores a first render of the Task page
// once took longer (CI-like run, Task.test.tsx). They now wait up to 10 s; what they wait for
// usually comes in milliseconds, and a check that something stays absent does not use them.
import { configure } from '@testing-library/react'

if ('window' in globalThis) configure({ asyncUtilTimeout: 10_000 })
