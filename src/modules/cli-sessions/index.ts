// Routes of this feature (being built).
import { Elysia } from 'elysia'
import type { AppDeps } from '../../app'

export function cliSessionRoutes(_deps: AppDeps) {
  return new Elysia()
}
