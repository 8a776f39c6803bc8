// @vitest-environment jsdom
// The Behavior tab: the process count counts every process, also when only the summary's tree is
// there; a process picked in the tree shows its calls; a sample that never started says why
// (from the task's errors, or from the report's debug.errors offline) instead of "no processes".
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { BehaviorView, processCount } from './BehaviorView'
import { ReportPage } from './report-context'

const node = (pid: number, name: string, children: unknown[] = []) => ({ pid, ppid: 1, process_name: name, command_line: `${name} -x`, first_seen: 1, children })

let clientHeight: PropertyDescriptor | undefined
beforeAll(() => {
  clientHeight = Object.getOwnPropertyDescriptor(HTMLElement.prototype, 'clientHeight')
  Object.defineProperty(HTMLElement.prototype, 'clientHeight', { configurable: true, get() { return this.getAttribute('role') === 'grid' ? 480 : 0 } })
})
afterAll(() => {
  if (clientHeight) Object.defineProperty(HTMLElement.prototype, 'clientHeight', clientHeight)
})
afterEach(cleanup)

const processesTitle = () => screen.getByRole('region', { name: 'Processes' }).querySelector('h3')?.textContent

describe('Behavior tab', () => {
  it('counts every process of the tree when the report is the summary (no behavior.processes)', () => {
    // /tasks/summary: processtree kept, processes and generic left out. One root, three descendants.
    const summary = { behavior: { processtree: [node(10, 'sh', [node(11, 'curl'), node(12, 'sh', [node(13, 'rm')])])], summary: {} } }
    render(<BehaviorView report={summary} />)
    expect(processesTitle()).toBe('Processes(4)')
    expect(processCount(summary)).toBe(4)
    // The full report says the same.
    expect(processCount({ behavior: { processes: [{}, {}, {}, {}], processtree: [node(10, 'sh')] } })).toBe(4)
    // A 100,000-deep chain is counted without recursion.
    let chain: unknown = node(0, 'x')
    for (let i = 1; i < 100_000; i++) chain = node(i, 'x', [chain])
    expect(processCount({ behavior: { processtree: [chain] } })).toBe(100_000)
  })

  it('shows the calls of the process picked in the tree, from the full report offline', async () => {
    const user = userEvent.setup()
    const report = {
      behavior: {
        processtree: [node(10, 'sh', [node(11, 'curl')])],
        processes: [
          { pid: 10, process_name: 'sh', calls: [{ category: 'process', api: 'execve', arguments: { filename: '/usr/bin/curl' }, status: true, return_value: 0, time: 1_767_225_600, tid: 10 }] },
          { pid: 11, process_name: 'curl', calls: [
            { category: 'network', api: 'connect', arguments: { addr: '203.0.113.5:80' }, status: true, return_value: 0, time: 1_767_225_601, tid: 11 },
            { category: 'file', api: 'openat', arguments: { path: '/etc/hosts' }, status: false, return_value: -2, time: 1_767_225_601, tid: 11 }
          ] }
        ]
      }
    }
    render(<BehaviorView report={report} />)
    const grid = await screen.findByRole('grid', { name: 'Calls' })
    await waitFor(() => expect(grid.querySelectorAll('[data-call]')).toHaveLength(1))
    expect(grid.textContent).toContain('execve')
    const tree = screen.getByRole('tree', { name: 'Process tree' })
    await user.click(within(tree).getByRole('button', { name: 'curl' }))
    await waitFor(() => expect(grid.querySelectorAll('[data-call]')).toHaveLength(2))
    expect(grid.textContent).toContain('connect')
    expect(grid.querySelector('[data-failed]')?.textContent).toContain('openat')
    expect(within(tree).getAllByRole('treeitem').find((i) => i.getAttribute('aria-selected') === 'true')?.textContent).toContain('curl')
    expect(screen.getByRole('region', { name: 'Calls' }).querySelector('h3')?.textContent).toBe('Calls(3)')
  })

  it('says the sample did not start, with the OS\'s reason, from the task\'s errors', () => {
    const reason = 'the analyzer reported failed: the sample did not start: Exec format error (ENOEXEC)'
    render(
      <ReportPage.Provider value={{ calls: null, taskErrors: [reason] }}>
        <BehaviorView report={{ behavior: { processtree: [], summary: {} } }} />
      </ReportPage.Provider>
    )
    expect(screen.getByRole('alert').textContent).toBe('The sample did not start: Exec format error (ENOEXEC). No process ran, so there is no behaviour to show.')
    expect(screen.getByText('No process: the sample did not start.')).toBeTruthy()
    expect(screen.queryByRole('region', { name: 'Calls' })).toBeNull()
  })

  it('finds the reason in an offline report\'s debug.errors, Aviary\'s and Cuckoo\'s', () => {
    render(<BehaviorView report={{ behavior: { processes: [] }, debug: { errors: ['x', 'the analyzer reported failed: the sample did not start: spawn EACCES'] } }} />)
    expect(screen.getByRole('alert').textContent).toMatch(/^The sample did not start: spawn EACCES\./)
    cleanup()
    render(<BehaviorView report={{ behavior: {}, debug: { errors: ['The package "exe" start function raised an error: Unable to execute initial process, analysis aborted'] } }} />)
    expect(screen.getByRole('alert').textContent).toMatch(/Unable to execute initial process/)
    cleanup()
    // A run with processes never claims a failed start, whatever the errors say.
    render(<BehaviorView report={{ behavior: { processtree: [node(1, 'sh')] }, debug: { errors: ['the sample did not start: x'] } }} />)
    expect(screen.queryByRole('alert')).toBeNull()
  })
})
