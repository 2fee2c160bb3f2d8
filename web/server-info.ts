// GET /api/info, read once per page load: what the console must know of the server's settings (set-up state, password length).
import { api } from './api.ts'

/** The fields of GET /api/info the console reads. */
export interface ServerInfo {
  setupRequired: boolean
  passwordMinLength: number
}

/** The contract's minimum, and every server's before GET /api/info and --password-min-length existed. */
export const defaultPasswordMinLength = 6

let info: Promise<ServerInfo | null> | null = null

/** The server's answer, or null when it has no GET /api/info (an older server) or could not be reached (asked again next time). */
export function serverInfo(): Promise<ServerInfo | null> {
  info ??= api<ServerInfo>('GET', '/api/info', undefined, { auth: false }).catch(() => {
    info = null
    return null
  })
  return info
}

/** The shortest password this server takes (its --password-min-length). */
export async function passwordMinLength(): Promise<number> {
  return (await serverInfo())?.passwordMinLength ?? defaultPasswordMinLength
}

/** The hint under every field where a password is set, in the same words everywhere. */
export function passwordHint(minLength: number): string {
  return `At least ${minLength} characters.`
}
