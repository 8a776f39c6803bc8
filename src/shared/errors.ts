// Error codes of the analysis API. Bodies keep Cuckoo's shape, {"message": "..."}, and add
// `code` so our own clients need not match on text.
export const ErrorCodes = {
  BAD_REQUEST: 'AVIARY_BAD_REQUEST',
  UNAUTHORIZED: 'AVIARY_UNAUTHORIZED',
  FORBIDDEN: 'AVIARY_FORBIDDEN',
  NOT_FOUND: 'AVIARY_NOT_FOUND',
  METHOD_NOT_ALLOWED: 'AVIARY_METHOD_NOT_ALLOWED',
  TASK_NOT_FOUND: 'AVIARY_TASK_NOT_FOUND',
  TASK_RUNNING: 'AVIARY_TASK_RUNNING',
  /** The task's status does not allow what was asked (a reschedule of a running task). */
  TASK_STATE: 'AVIARY_TASK_STATE',
  SAMPLE_EXISTS: 'AVIARY_SAMPLE_EXISTS',
  FILE_NOT_FOUND: 'AVIARY_FILE_NOT_FOUND',
  REPORT_NOT_FOUND: 'AVIARY_REPORT_NOT_FOUND',
  MACHINE_NOT_FOUND: 'AVIARY_MACHINE_NOT_FOUND',
  MACHINE_BUSY: 'AVIARY_MACHINE_BUSY',
  TOO_LARGE: 'AVIARY_TOO_LARGE',
  INTERNAL: 'AVIARY_INTERNAL'
} as const
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes]
