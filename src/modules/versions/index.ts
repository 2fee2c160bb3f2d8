// Routes of this feature (being built).
import { Elysia } from 'elysia'
import type { AppDeps } from '../../app'

export function versionRoutes(_deps: AppDeps) {
  return new Elysia()
}
