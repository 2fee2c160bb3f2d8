// Routes of this feature (being built).
import { Elysia } from 'elysia'
import type { AppDeps } from '../../app'

export function runtimeRoutes(_deps: AppDeps) {
  return new Elysia()
}
