import { describe, expect, it } from 'vitest'
import { TASK_FIELDS } from '../../../shared/api/task-fields'
import { DEFAULT_OPTIONS, toFields } from './options'

describe('the submit form', () => {
  it('sends every task field it is given, and none it is not', () => {
    expect(toFields(DEFAULT_OPTIONS, 'url')).toEqual({ priority: '1' })
    const all = toFields({
      ...DEFAULT_OPTIONS, package: ' exe ', options: 'a=b', timeout: '60', priority: '2', machine: 'm', platform: 'windows', tags: 'x64',
      custom: 'c', owner: 'alice', memory: true, enforce_timeout: true, clock: '2026-11-23T10:04', unique: true
    }, 'file')
    expect(Object.keys(all).sort()).toEqual([...TASK_FIELDS, 'unique'].sort())
    expect(all).toMatchObject({ package: 'exe', memory: '1', enforce_timeout: '1', clock: '11-23-2026 10:04:00', unique: '1' })
    expect(toFields({ ...DEFAULT_OPTIONS, unique: true }, 'url')).not.toHaveProperty('unique')
  })
})
