// What a machine build tells whoever watches it (the CLI prints it, the Machines page will show
// it): one event shape for every kind of machine the builder makes. Documented in
// docs/machines.md ("The builder service").

/** The steps of `aviary machines create linux`, in order. */
export const LINUX_STEPS = ['check', 'image', 'disk', 'define', 'boot', 'settle', 'snapshot', 'register', 'doctor', 'cleanup'] as const
export type LinuxStep = (typeof LINUX_STEPS)[number]

export interface BuildEvent {
  /** 1, 2, 3, … within one build. */
  seq: number
  /** Milliseconds since the build started. */
  elapsedMs: number
  step: LinuxStep
  /**
   * `step`: a step begins (for one machine when `machine` is set);
   * `note`: something worth a line within a step (the image builder's progress, a warning);
   * `output`: one line of a tool's own output (mmdebstrap, dpkg): many, for a log view.
   */
  kind: 'step' | 'note' | 'output'
  /** The machine a per-machine step is about (disk, define, boot, settle, snapshot). */
  machine?: string
  /** One line for people. */
  message: string
}

export type BuildListener = (e: BuildEvent) => void

/** Numbers and times events; what builders call. */
export class Progress {
  private seq = 0
  private readonly t0 = Date.now()

  constructor(private readonly listener: BuildListener = () => undefined) {}

  private emit(step: LinuxStep, kind: BuildEvent['kind'], message: string, machine?: string): void {
    const e: BuildEvent = { seq: ++this.seq, elapsedMs: Date.now() - this.t0, step, kind, ...(machine !== undefined ? { machine } : {}), message }
    try {
      this.listener(e)
    } catch {
      // A listener's failure is not the build's.
    }
  }

  step(step: LinuxStep, message: string, machine?: string): void {
    this.emit(step, 'step', message, machine)
  }

  note(step: LinuxStep, message: string, machine?: string): void {
    this.emit(step, 'note', message, machine)
  }

  output(step: LinuxStep, line: string): void {
    this.emit(step, 'output', line)
  }

  elapsed(): number {
    return Date.now() - this.t0
  }
}
