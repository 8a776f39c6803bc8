// The names of the data directory and of an analysis folder, written once in layout.ts: each a
// safe relative path, none twice, the guest's upload folders among them, and joined only from
// checked parts (a name a guest or a client chose cannot climb out of its folder).
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { BEHAVIOR_LOG, DROPPED_FOLDER, STRACE_LOG, UPLOAD_FOLDERS } from '../../guest-protocol/netlog'
import { ARTIFACTS, DATA_FILES, PathOutsideDataError, UPLOAD_DIRS, artifactPath, createLayout, monitorLogName, shotFile } from './layout'

describe('analysis folder names', () => {
  it('are relative paths of plain names, each named once', () => {
    const values = Object.values(ARTIFACTS)
    expect(new Set(values).size).toBe(values.length)
    for (const v of [...values, ...Object.values(DATA_FILES)]) {
      for (const part of v.split('/')) expect(part, v).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/)
    }
    // A file in a folder is named under that folder's own name.
    for (const v of values.filter((x) => x.includes('/'))) expect(values, v).toContain(v.split('/')[0])
  })

  it('hold what the guest protocol says the guest uploads', () => {
    expect([...UPLOAD_DIRS]).toEqual([...UPLOAD_FOLDERS])
    for (const dir of UPLOAD_FOLDERS) expect(Object.values(ARTIFACTS)).toContain(dir)
    expect([ARTIFACTS.behaviorLog, ARTIFACTS.straceLog, ARTIFACTS.dropped]).toEqual([BEHAVIOR_LOG, STRACE_LOG, DROPPED_FOLDER])
    expect(ARTIFACTS.behaviorLog.startsWith(`${ARTIFACTS.logs}/`)).toBe(true)
  })

  it('join under the analysis folder, and refuse a part that would leave it', () => {
    const layout = createLayout('/data')
    expect(layout.artifact(7, ARTIFACTS.reportJson)).toBe(path.join('/data/storage/analyses/7/reports/report.json'))
    expect(artifactPath('/a/7', ARTIFACTS.shots, shotFile(3, true))).toBe('/a/7/shots/0003_small.jpg')
    expect(layout.artifact(7, ARTIFACTS.dropped, 'x.exe')).toBe('/data/storage/analyses/7/files/x.exe')
    for (const bad of ['..', '.', '', 'a/b', 'a\\b', 'nul\0']) {
      expect(() => layout.artifact(7, ARTIFACTS.dropped, bad), JSON.stringify(bad)).toThrow(PathOutsideDataError)
    }
    expect(() => layout.artifact(0, ARTIFACTS.pcap)).toThrow(PathOutsideDataError)
    expect(layout.retentionRules).toBe('/data/retention.json')
    expect(layout.lockFile).toBe('/data/aviary.lock')
  })

  it('name screenshots and monitor logs from checked numbers', () => {
    expect(shotFile(1)).toBe('0001.jpg')
    expect(shotFile('12345', true)).toBe('12345_small.jpg')
    for (const bad of ['', '1/2', '-1', '1e3', '../1']) expect(() => shotFile(bad), bad).toThrow(PathOutsideDataError)
    expect(() => shotFile(-1)).toThrow(PathOutsideDataError)
    expect(monitorLogName(1234)).toBe('1234.bson')
    expect(() => monitorLogName('../x')).toThrow(PathOutsideDataError)
  })
})
