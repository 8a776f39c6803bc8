// The report contract: the schema composed from the modules' schemas is the one published in
// docs/report.schema.json, agrees with the shared section table, and real reports fit it and give
// Cuckoo's consumers every field they read. `npm run report-schema` rewrites the published file.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { FULL_TABS, REPORT_SECTIONS, REPORT_TABS, summaryDrops } from '../../shared/report-sections'
import Ajv from 'ajv'
import { ReportSchema } from './report-schema'
import { processAnalysis } from './pipeline'
import { schemaProblems } from '../../../test/report-contract'
import { missingConsumerFields } from '../../../test/cuckoo-report-fields'
import { createFileTypeDetector } from '../hashing/magic'

const detectFileType = createFileTypeDetector()

const PUBLISHED = path.join(__dirname, '../../../docs/report.schema.json')
/**
 * The published file declares its dialect: TypeBox writes tuples in Draft 7's form (`items` as an
 * array, `additionalItems`), which a validator assuming 2020-12 (Python's jsonschema, by default)
 * rejects as an invalid schema before it checks anything.
 */
const SCHEMA_DIALECT = 'http://json-schema.org/draft-07/schema#'
const published = (): string => `${JSON.stringify({ $schema: SCHEMA_DIALECT, ...ReportSchema }, null, 2)}\n`

/** Python's jsonschema (Debian's python3-jsonschema), as a consumer calls it: validate(report, schema). */
function pythonProblems(report: unknown): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'aviary-pyschema-'))
  try {
    writeFileSync(path.join(dir, 'report.json'), JSON.stringify(report))
    const script = [
      'import json, sys, jsonschema',
      'schema = json.load(open(sys.argv[1])); report = json.load(open(sys.argv[2]))',
      'assert jsonschema.validators.validator_for(schema) is jsonschema.Draft7Validator, "dialect"',
      'errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(report), key=lambda e: list(e.absolute_path))',
      'jsonschema.validate(report, schema) if not errors else None',
      'print("\\n".join("/" + "/".join(map(str, e.absolute_path)) + " " + e.message for e in errors[:20]))'
    ].join('\n')
    return execFileSync('/usr/bin/python3', ['-c', script, PUBLISHED, path.join(dir, 'report.json')], { encoding: 'utf8' }).trim()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

describe('the report schema', () => {
  it('is the one published in docs/report.schema.json (npm run report-schema writes it)', () => {
    if (process.env.AVIARY_WRITE_SCHEMA === '1') writeFileSync(PUBLISHED, published())
    expect(readFileSync(PUBLISHED, 'utf8')).toBe(published())
  })

  it('has exactly the sections of the shared table, and the table agrees with the UI and the summary', () => {
    expect(Object.keys(ReportSchema.properties)).toEqual(REPORT_SECTIONS.map((s) => s.key).sort((a, b) => Object.keys(ReportSchema.properties).indexOf(a) - Object.keys(ReportSchema.properties).indexOf(b)))
    expect(new Set(Object.keys(ReportSchema.properties))).toEqual(new Set(REPORT_SECTIONS.map((s) => s.key)))
    const tabs = new Set(REPORT_TABS.map((t) => t.id))
    for (const s of REPORT_SECTIONS) if (s.tab !== null) expect(tabs.has(s.tab), s.key).toBe(true)
    // Cuckoo 2.0.7's /tasks/summary cut, and the tabs that therefore need the full report.
    expect(REPORT_SECTIONS.filter((s) => summaryDrops(s.key) === '*').map((s) => s.key).sort()).toEqual(['debug', 'metadata', 'procmemory', 'screenshots'])
    expect(summaryDrops('behavior')).toEqual(['processes', 'generic', 'apistats'])
    expect([...FULL_TABS].sort()).toEqual(['memory', 'raw', 'screenshots'])
  })
})

describe('reports of real inputs fit the schema and give consumers their fields', () => {
  let root = ''
  beforeAll(() => { root = mkdtempSync(path.join(tmpdir(), 'aviary-contract-')) })
  afterAll(() => rmSync(root, { recursive: true, force: true }))

  async function report(name: string, task: Record<string, unknown>, sample: string | null, files: Record<string, string | Buffer>): Promise<Record<string, unknown>> {
    const dir = path.join(root, name)
    mkdirSync(dir, { recursive: true })
    for (const [rel, content] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true })
      writeFileSync(path.join(dir, rel), content)
    }
    let s = null
    if (sample !== null) {
      copyFileSync(sample, path.join(dir, 'binary'))
      s = { path: path.join(dir, 'binary'), name: path.basename(sample), type: await detectFileType(path.join(dir, 'binary')) }
    }
    const logs: string[] = []
    await processAnalysis({ taskId: Number(task.id), dir, task, sample: s, url: (task.url as string | undefined) ?? null, yaraRules: null, log: (m) => logs.push(m) },
      { detectType: detectFileType, aviaryVersion: '0.0.0-test' })
    return JSON.parse(readFileSync(path.join(dir, 'reports/report.json'), 'utf8')) as Record<string, unknown>
  }

  const guest = { name: 'lab1', label: 'lab1', manager: 'physical', started_on: '2026-11-26 10:00:00', shutdown_on: '2026-11-26 10:01:00', status: 'stopped' }
  const now = Date.now()
  const behavior = [
    { type: 'analyzer', version: 1, task: '1', package: 'elf', platform: 'linux', category: 'file', target: '/tmp/ls', pid: 100, started: now, ended: now + 500, reason: 'tree-ended', monitors: ['proc'] },
    { type: 'process', pid: 100, ppid: 1, command_line: '/tmp/ls -la', exe: '/tmp/ls', first_seen: now, exited: now + 10 },
    { type: 'process', pid: 101, ppid: 100, command_line: 'sh -c id', exe: '/bin/sh', first_seen: now + 2, exited: now + 5 },
    { type: 'file', op: 'created', path: '/tmp/out.txt', time: now + 3, pid: 101 },
    { type: 'connection', proto: 'tcp', src: '10.0.0.2', sport: 40000, dst: '93.184.216.34', dport: 80, pid: 101, time: now + 4 }
  ].map((r) => JSON.stringify(r)).join('\n') + '\n'

  it('an ELF run: every section fits, ELF static as Cuckoo writes it, and all four consumers find their fields', async () => {
    const r = await report('elf', { id: 1, category: 'file', package: 'elf', platform: 'linux', options: null, route: 'none', added_on: '2026-11-26 09:59:00',
      started_on: '2026-11-26 10:00:00', completed_on: '2026-11-26 10:01:00', duration: 60, guest, errors: [] }, '/bin/ls', {
      'logs/behavior.jsonl': behavior,
      'files/0123456789abcdef_out.txt': 'uid=0(root)\n',
      'files.json': JSON.stringify({ path: 'files/0123456789abcdef_out.txt', filepath: '/tmp/out.txt', pids: [101] }) + '\n',
      'buffer/5f1e4c0d7cbe0a4f8a4ba2ef0aa7f86bd2e1e2a1': 'captured buffer',
      'shots/0001.jpg': Buffer.from('ffd8ffe000104a46494600', 'hex'),
      'analysis.log': '2026-11-26 10:00:00,000 [aviary.engine] INFO: started\n'
    })
    expect(schemaProblems(r)).toEqual([])
    expect(pythonProblems(r)).toBe('')
    expect(Object.keys(r)).toEqual(REPORT_SECTIONS.map((s) => s.key).filter((k) => k !== 'memory'))
    const elf = (r.static as { elf: { symbol_tables: unknown[]; relocations: unknown[]; notes: unknown[] } }).elf
    expect(elf.symbol_tables.length).toBeGreaterThan(0)
    expect(elf.relocations.length).toBeGreaterThan(0)
    expect(elf.notes.length).toBeGreaterThan(0)
    expect((r.buffer as unknown[]).length).toBe(1)
    expect(r.metadata).toMatchObject({ output: { buffers: [{ dirname: 'buffer', basename: '5f1e4c0d7cbe0a4f8a4ba2ef0aa7f86bd2e1e2a1' }], dropped: [{ dirname: 'files', basename: '0123456789abcdef_out.txt' }], memdumps: [] } })
    expect(r.extracted).toEqual([])
    expect(missingConsumerFields(r, 'file')).toEqual([])
  })

  it('a URL task that never ran: every section fits, with its empty values', async () => {
    const r = await report('url', { id: 2, category: 'url', url: 'http://evil.example/a', target: 'http://evil.example/a', package: null, platform: null,
      options: null, route: null, added_on: '2026-11-26 09:59:00', started_on: null, completed_on: null, duration: -1, guest: {}, errors: ['no machine'] }, null, {})
    expect(schemaProblems(r)).toEqual([])
    expect(pythonProblems(r)).toBe('')
    expect(r.target).toEqual({ category: 'url', url: 'http://evil.example/a' })
    expect((r.debug as { errors: string[] }).errors).toEqual(['no machine'])
    expect(missingConsumerFields(r, 'url', ['Cortex', 'FAME', 'CuckooWeb'])).toEqual([])
  })

  it('the schema catches drift: a renamed key, a wrong type, a ttp in the old shape', async () => {
    const r = await report('drift', { id: 3, category: 'file', guest, errors: [] }, '/bin/true', {})
    expect(schemaProblems(r)).toEqual([])
    const bad = JSON.parse(JSON.stringify(r)) as Record<string, Record<string, unknown>>
    bad.info!.scor = bad.info!.score
    delete bad.info!.score
    ;(bad.network as Record<string, unknown>).hosts = 'x'
    bad.signatures = [{ name: 'x', description: 'd', severity: 2, families: [], references: [], ttp: { T1105: 'Ingress Tool Transfer' }, marks: [], markcount: 0 }] as never
    const problems = schemaProblems(bad).join('\n')
    expect(problems).toMatch(/\/info must have required property 'score'/)
    expect(problems).toMatch(/\/info must NOT have additional properties: scor/)
    expect(problems).toMatch(/\/network\/hosts must be array/)
    expect(problems).toMatch(/\/signatures\/0\/ttp\/T1105 must be object/)
    // The same drift, seen by an independent validator reading the published file.
    const py = pythonProblems(bad)
    expect(py).toMatch(/^\/info 'score' is a required property/m)
    expect(py).toMatch(/^\/network\/hosts 'x' is not of type 'array'/m)
    expect(py).toMatch(/^\/signatures\/0\/ttp\/T1105 'Ingress Tool Transfer' is not of type 'object'/m)
  })

  it('the published file is a valid Draft 7 schema to ajv and to Python\'s jsonschema', () => {
    const schema = JSON.parse(readFileSync(PUBLISHED, 'utf8')) as Record<string, unknown>
    expect(schema.$schema).toBe(SCHEMA_DIALECT)
    expect(() => new Ajv({ strict: true }).compile(schema)).not.toThrow()
    execFileSync('/usr/bin/python3', ['-c', 'import json, sys, jsonschema; jsonschema.Draft7Validator.check_schema(json.load(open(sys.argv[1])))', PUBLISHED])
  })
})
