import { describe, expect, it } from 'vitest'
import { Compile } from 'typebox/compile'
import { CreateFileBody, CreateUrlBody, SubmitBody } from './requests'
import { Task } from './schemas'
import { fieldsAsSent, TASK_FIELDS, TASK_FLAGS, TaskForm, TaskFormFields } from './task-fields'

describe('the task fields, written once', () => {
  it('are the form of every create route, and every one of them is shown back in the task', () => {
    expect(Object.keys(TaskFormFields)).toEqual([...TASK_FIELDS])
    for (const body of [CreateFileBody, CreateUrlBody, SubmitBody]) {
      for (const field of TASK_FIELDS) expect(Object.keys(body.properties), field).toContain(field)
    }
    for (const field of TASK_FIELDS) expect(Object.keys(Task.properties), field).toContain(field)
    for (const flag of TASK_FLAGS) expect(TASK_FIELDS).toContain(flag)
  })

  it('validate as the create routes do: each field optional, each refusal with its words', () => {
    const form = Compile(TaskForm)
    expect(form.Check({})).toBe(true)
    expect(form.Check({ package: 'exe', timeout: 60, priority: 3, memory: 'yes', enforce_timeout: 'False', clock: '01-31-2026 13:45:00', tags: 'a,b' })).toBe(true)
    expect(form.Check({ priority: 4 })).toBe(false)
    expect(form.Check({ memory: 'maybe' })).toBe(false)
    expect(form.Check({ package: '../x' })).toBe(false)
    for (const field of TASK_FIELDS) expect(typeof (TaskFormFields[field] as { 'x-allowed'?: unknown })['x-allowed'], field).toBe('string')
  })

  it('are kept by a dispatcher as sent: absent ones null, priority 1 unless given', () => {
    const none = fieldsAsSent({})
    expect(Object.keys(none).sort()).toEqual([...TASK_FIELDS].sort())
    expect(none).toEqual({ ...Object.fromEntries(TASK_FIELDS.map((k) => [k, null])), priority: 1 })
    expect(fieldsAsSent({ timeout: 120, priority: 2, memory: 'False', tags: 'x64', clock: '01-01-2020 10:00:00' })).toMatchObject({
      timeout: 120, priority: 2, memory: 'False', tags: 'x64', clock: '01-01-2020 10:00:00', package: null
    })
  })
})
