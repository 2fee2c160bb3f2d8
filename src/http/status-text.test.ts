// The status table of our own says what node:http says, for every status it knows.
import { describe, expect, test } from 'bun:test'
import { STATUS_CODES } from 'node:http'
import { statusTexts } from './status-text'
import { errorResponse } from './errors'
import { AppError } from './app-error'

describe('status texts', () => {
  test('the same phrase as node:http for every status, and no other status', () => {
    expect({ ...statusTexts } as Record<string, string | undefined>).toEqual({ ...STATUS_CODES })
  })

  test('an error body names its status the way node:http does', async () => {
    for (const status of [400, 401, 403, 404, 409, 413, 415, 418, 429, 500, 503]) {
      const body = (await errorResponse(new AppError(status, 'SOME_CODE', 'a message')).json()) as { error: string; statusCode: number }
      expect(body.statusCode).toBe(status)
      expect(body.error).toBe(STATUS_CODES[status]!)
    }
  })
})
