// An error whose message the agent may show to its client, with the HTTP status to answer.
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message)
  }
}
