// Routes of the account endpoints: register, login, me (the device flow lives in cli-sessions/).
import { Elysia } from 'elysia'
import type { AppDeps } from '../deps'
import { clientAddress } from '../../http/client'
import { LoginFailureTracker, login, register } from './service'
import { loginBody, loginResponse, meResponse, registerBody, registerResponse } from './model'

export function authRoutes(deps: AppDeps) {
  const failures = new LoginFailureTracker(deps.clock)
  return new Elysia({ prefix: '/auth' })
    .use(deps.guard)
    .post(
      '/register',
      async ({ body, request, server, set }) => {
        deps.rateLimiter.hit('register', clientAddress(request, server, deps.config), deps.config.rateLimits.register)
        const registration = await register(deps.db, deps.clock, deps.tokens, deps.config, body)
        set.status = 201
        return registration
      },
      {
        body: registerBody,
        response: { 201: registerResponse },
        detail: { summary: 'Create an account (unless registration is closed) and sign in', tags: ['auth'] },
      },
    )
    .post(
      '/login',
      async ({ body, request, server }) => {
        const address = clientAddress(request, server, deps.config)
        deps.rateLimiter.hit('login', address, deps.config.rateLimits.login)
        return login(deps.db, deps.clock, deps.tokens, failures, body, address)
      },
      {
        body: loginBody,
        response: { 200: loginResponse },
        detail: { summary: 'Sign in with email and password', tags: ['auth'] },
      },
    )
    .get(
      '/me',
      ({ user }) => ({
        id: user.id,
        email: user.email,
        displayName: user.displayName,
        role: user.role,
        status: user.status,
        ...(user.apiKey ? { apiKey: { id: user.apiKey.id, name: user.apiKey.name, prefix: user.apiKey.prefix, scopes: user.apiKey.scopes, miniAppIds: user.apiKey.miniAppIds } } : {}),
      }),
      { auth: 'any-key', response: { 200: meResponse }, detail: { summary: 'The signed-in user', tags: ['auth'] } },
    )
}
