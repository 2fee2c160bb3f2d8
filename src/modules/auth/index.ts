// Routes of this feature (being built).
import { Elysia } from 'elysia'
import type { AppDeps } from '../../app'

export function authRoutes(_deps: AppDeps) {
  return new Elysia()
}
