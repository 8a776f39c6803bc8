// The 409s of machine controls: a machine busy with a task or another action, an engine that is off,
// or something the driver cannot do.
import { ApiError } from '../errors'
import { ErrorCodes } from '../../shared/errors'

export const conflict = (message: string): ApiError => new ApiError(409, message, ErrorCodes.MACHINE_BUSY)
/** The 409 of every machine control while the engine is off. */
export const engineNotRunning = (): ApiError => conflict('the analysis engine is not running: machines cannot be controlled')
