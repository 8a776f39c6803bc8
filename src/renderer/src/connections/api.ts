// Saved connections (/aviary/connections on the local service) and what a 400 says about them.
import { HttpError, sendJson } from '../api/http'
import { ConnectionView } from '../../../shared/api/responses'
import { ErrorBody } from '../../../shared/api/schemas'
import type { SavedConnection } from '../components/ConnectionPicker'

export type { SavedConnection }
export const CONNECTIONS_KEY = ['connections'] as const

export interface ConnectionInput { name?: string; url?: string; token?: string | null }

export const createConnection = (body: ConnectionInput): Promise<{ connection: SavedConnection }> =>
  sendJson(null, 'POST', '/aviary/connections', ConnectionView, body)
export const updateConnection = (id: number, body: ConnectionInput): Promise<{ connection: SavedConnection }> =>
  sendJson(null, 'PUT', `/aviary/connections/${id}`, ConnectionView, body)
export const deleteConnection = (id: number): Promise<{ message: string }> =>
  sendJson(null, 'DELETE', `/aviary/connections/${id}`, ErrorBody)

export type FormField = 'name' | 'url' | 'token'
/**
 * Which field a 400 is about: the service's messages start with the field's name ("url: ...").
 * Null (show it on the form as a whole) for any other failure.
 */
export function fieldOfError(err: unknown): FormField | null {
  if (!(err instanceof HttpError) || err.status !== 400) return null
  const m = /^\s*(?:body\/)?(name|url|token)\b/i.exec(err.message)
  return m ? (m[1]!.toLowerCase() as FormField) : null
}
