// A miniapp's console address names it by App ID (`/apps/com.example.shop`); addresses made before
// that name it by its internal id (`/apps/0193…`), and keep working.
import { api, ApiError, type MiniApp } from './api.ts'

/** Internal ids are UUIDs; an App ID starts with a letter and is never shaped like one in practice. */
const INTERNAL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function isInternalId(segment: string): boolean {
  return INTERNAL_ID.test(segment)
}

/** The internal id (what the API's paths take) of the miniapp the address segment names. */
export async function miniAppIdOf(segment: string): Promise<string> {
  if (isInternalId(segment)) return segment
  const apps = await api<MiniApp[]>('GET', '/api/mini-apps')
  const found = apps.find((app) => app.appId === segment) ?? apps.find((app) => app.appId.toLowerCase() === segment.toLowerCase())
  if (!found) throw new ApiError(404, 'MINI_APP_NOT_FOUND', `No miniapp with the App ID ${segment} is yours to see. Check the address, or ask its owner to add you as a member.`)
  return found.id
}
