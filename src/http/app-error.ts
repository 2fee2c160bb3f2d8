// The one error type (rendered by http/errors.ts); kept free of Elysia so pure rules and the developer CLI load it cheaply.

export interface ErrorDetail {
  field: string
  message: string
}

/** An error a caller can act on: thrown anywhere, rendered by `errorHandler`. */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    super(message)
    this.name = 'AppError'
  }
}
