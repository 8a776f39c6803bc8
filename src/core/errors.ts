// Errors that services raise for the HTTP layer to map. Messages are for clients: they name the
// field and what it accepts, and never carry a stack or an absolute path.
import { ErrorCodes, type ErrorCode } from '../shared/errors'

export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly code: ErrorCode
  ) {
    super(message)
  }
}

export const badRequest = (field: string, what: string): ApiError =>
  new ApiError(400, `${field}: ${what}`, ErrorCodes.BAD_REQUEST)

export const notFound = (message: string, code: ErrorCode = ErrorCodes.NOT_FOUND): ApiError =>
  new ApiError(404, message, code)

export const taskNotFound = (): ApiError => notFound('Task not found', ErrorCodes.TASK_NOT_FOUND)
