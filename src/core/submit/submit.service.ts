// Turns submissions into tasks: one file, one URL, or (create/submit) several files, archives
// unpacked to one task per member, and lines of URLs or hashes of stored samples.
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import path from 'node:path'
import { ApiError, badRequest } from '../errors'
import { ErrorCodes } from '../../shared/errors'
import { printable as quotable } from '../../shared/api/request-errors'
import type { TasksRepository, NewTask } from '../db/tasks.repository'
import type { SubmitsRepository } from '../db/submits.repository'
import type { SamplesRepository, HashKind } from '../db/samples.repository'
import type { MachinesRepository } from '../db/machines.repository'
import type { StorageLayout } from '../storage/layout'
import type { IngestedFile } from '../storage/ingest'
import type { SampleStore, StoredSample } from '../samples/sample-store'
import { parseTaskParams, parseOptions, withOption, withoutOption, type TaskFields, type TaskParams } from './task-params'
import { normalizeUrl } from './urls'
import { tagsNote } from '../../shared/task-notes'
import type { RoutingSettings } from '../network/routing-config'
import { detectArchive, unpackArchive, type UnpackLimits } from './unpack'

export interface Upload {
  file: IngestedFile
  filename: string | undefined
}

export interface SubmitResult {
  submit_id: number
  task_ids: number[]
  errors: string[]
}

export interface SubmitDeps {
  tasks: TasksRepository
  submits: SubmitsRepository
  samples: SamplesRepository
  machines: MachinesRepository
  store: SampleStore
  layout: StorageLayout
  unpackLimits?: Partial<UnpackLimits>
  /** The routes this host offers now (machines.json); null: it routes nothing. */
  routing?: () => RoutingSettings | null
}

const HASH_KINDS: Record<number, HashKind> = { 32: 'md5', 40: 'sha1', 64: 'sha256', 128: 'sha512' }

export class SubmitService {
  constructor(private readonly d: SubmitDeps) {}

  async createFile(upload: Upload, fields: TaskFields & { unique?: string | undefined }): Promise<number> {
    const params = parseTaskParams(fields, this.d.machines, this.d.routing?.() ?? null)
    if (fields.unique !== undefined && /^(1|true|yes|on)$/i.test(fields.unique) && this.d.store.exists(upload.file.sha256)) {
      throw new ApiError(400, 'This file has already been submitted', ErrorCodes.SAMPLE_EXISTS)
    }
    const stored = await this.d.store.commit(upload.file, upload.filename)
    return this.d.tasks.insert(fileTask(stored, 'file', params, null))
  }

  createUrl(url: string, fields: TaskFields): number {
    const params = parseTaskParams(fields, this.d.machines, this.d.routing?.() ?? null)
    const target = normalizeUrl(url)
    if (!target) throw badRequest('url', `'${printable(url)}' is not an http or https URL`)
    return this.d.tasks.insert(urlTask(target, params, null))
  }

  async submit(uploads: Upload[], strings: string | undefined, fields: TaskFields): Promise<SubmitResult> {
    const params = parseTaskParams(fields, this.d.machines, this.d.routing?.() ?? null)
    const lines = (strings ?? '').split('\n').map((l) => l.trim()).filter(Boolean)
    if (uploads.length === 0 && lines.length === 0) {
      throw badRequest('files', 'give at least one file (fields file or files) or one line in strings')
    }
    const submitId = this.d.submits.create()
    const tasks: NewTask[] = []
    const errors: string[] = []
    for (const upload of uploads) {
      await this.submitFile(upload, params, submitId, tasks, errors)
    }
    for (const line of lines) {
      const task = await this.submitLine(line, params, submitId)
      if (typeof task === 'string') errors.push(task)
      else tasks.push(task)
    }
    return { submit_id: submitId, task_ids: this.d.tasks.insertMany(tasks), errors }
  }

  private async submitFile(upload: Upload, params: TaskParams, submitId: number, tasks: NewTask[], errors: string[]) {
    const format = await detectArchive(upload.file.tmpPath)
    const stored = await this.d.store.commit(upload.file, upload.filename) // archives are kept too
    if (!format) {
      tasks.push(fileTask(stored, 'file', params, submitId))
      return
    }
    const archiveName = path.basename(stored.target)
    const password = parseOptions(params.options).get('password') || 'infected'
    const scratch = await mkdtemp(path.join(this.d.layout.tmp, 'unpack-'))
    try {
      const result = await unpackArchive(this.d.layout.binary(stored.sample.sha256), {
        archiveName,
        format,
        password,
        tmpDir: scratch,
        limits: this.d.unpackLimits,
        onMember: async (member) => {
          const file = await this.d.store.ingest(member.source, Number.MAX_SAFE_INTEGER)
          const memberSample = await this.d.store.commit(file, path.posix.basename(member.path))
          // Cuckoo 2 keeps the archive as the target; Aviary runs the member itself, so the task
          // keeps the archive's name in option `archive` (the list, the summary and the name
          // search read it: searching the zip's name finds its members).
          const options = withOption(withOption(withoutOption(params.options, 'archive'), 'archive', archiveName), 'filename', member.path)
          tasks.push(fileTask(memberSample, 'archive', { ...params, options }, submitId))
        }
      })
      errors.push(...result.errors)
    } catch (err) {
      errors.push(`${archiveName}: could not be unpacked: ${(err as Error).message}`)
    } finally {
      await rm(scratch, { recursive: true, force: true })
    }
  }

  /** A line of `strings`: a hash of a stored sample, else a URL; an error message otherwise. */
  private async submitLine(line: string, params: TaskParams, submitId: number): Promise<NewTask | string> {
    const kind = /^[0-9a-fA-F]+$/.test(line) ? HASH_KINDS[line.length] : undefined
    if (kind) {
      const sample = this.d.samples.findByHash(kind, line)
      if (!sample) return `${kind} ${line.toLowerCase()} is not a sample of this instance`
      const names = await readdir(this.d.layout.uploadDir(sample.sha256)).catch(() => [] as string[])
      const target = await this.d.store.targetFor(sample, names.sort()[0]).catch(() => null)
      if (!target) return `${kind} ${line.toLowerCase()}: the sample's file is missing from storage`
      return fileTask({ sample, created: false, target }, 'file', params, submitId)
    }
    const url = normalizeUrl(line)
    if (!url) return `'${printable(line)}' is neither a URL nor the md5, sha1, sha256 or sha512 of a stored sample`
    return urlTask(url, params, submitId)
  }
}

function fileTask(stored: StoredSample, category: 'file' | 'archive', p: TaskParams, submitId: number | null): NewTask {
  return { ...p, category, target: stored.target, sample_id: stored.sample.id, submit_id: submitId, errors: notes(p) }
}

function urlTask(url: string, p: TaskParams, submitId: number | null): NewTask {
  return { ...p, category: 'url', target: url, sample_id: null, submit_id: submitId, errors: notes(p) }
}

/** What the task should know about its own settings: tags choose machines only with a platform (the spec). */
function notes(p: TaskParams): string[] {
  return p.tags.length > 0 && p.platform === null && p.machine === null ? [tagsNote(p.tags)] : []
}

/** A client string made safe to quote in a message: short, no invisible characters. */
const printable = (s: string): string => quotable(s, 200)
