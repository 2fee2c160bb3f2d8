// One device event checked on its own (decisions §13): a batch keeps its valid events and says what was wrong with each other one.
import { deviceEvents, type DeviceEvent } from './counters'

export interface DeviceEventInput {
  appId: string
  /** the version's id, or */
  versionId?: string
  /** its version string (a device knows its version, not our ids) */
  version?: string
  platform: 'ios' | 'android'
  event: DeviceEvent
  channel?: string
  deviceId?: string
  hostVersion?: string
  message?: string
  at?: string
}

export interface EventError {
  index: number
  code: string
  message: string
}

const channelPattern = /^[a-z][a-z0-9-]{0,31}$/
const isoDateTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/

function text(value: unknown, min: number, max: number): value is string {
  return typeof value === 'string' && value.length >= min && value.length <= max
}

/** The event as the service counts it, or what is wrong with it (`VALIDATION_ERROR`, naming the field). */
export function checkDeviceEvent(raw: unknown): DeviceEventInput | { field: string; message: string } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { field: '', message: 'must be an object' }
  const event = raw as Record<string, unknown>
  if (!text(event.appId, 1, 128)) return { field: 'appId', message: 'must be the app id, 1 to 128 characters' }
  if (event.versionId !== undefined && !text(event.versionId, 1, 64)) return { field: 'versionId', message: 'must be a version id, 1 to 64 characters' }
  if (event.version !== undefined && !text(event.version, 1, 64)) return { field: 'version', message: 'must be a version such as 1.2.0, 1 to 64 characters' }
  if (event.versionId === undefined && event.version === undefined) return { field: 'version', message: 'name the version: version (such as 1.2.0) or versionId' }
  if (event.platform !== 'ios' && event.platform !== 'android') return { field: 'platform', message: 'must be ios or android' }
  if (!deviceEvents.includes(event.event as DeviceEvent)) return { field: 'event', message: 'must be one of installed, launched, failed, rolled_back' }
  if (event.channel !== undefined && !(typeof event.channel === 'string' && channelPattern.test(event.channel))) return { field: 'channel', message: 'must be a channel name such as stable or beta' }
  // its form (decisions §18) is judged by the caller, as INVALID_DEVICE_ID
  if (event.deviceId !== undefined && typeof event.deviceId !== 'string') return { field: 'deviceId', message: 'must be a string' }
  if (event.hostVersion !== undefined && !text(event.hostVersion, 0, 64)) return { field: 'hostVersion', message: 'must be at most 64 characters' }
  if (event.message !== undefined && !text(event.message, 0, 8000)) return { field: 'message', message: 'must be text of at most 8000 characters' }
  if (event.at !== undefined && !(typeof event.at === 'string' && isoDateTime.test(event.at) && Number.isFinite(Date.parse(event.at)))) {
    return { field: 'at', message: 'must be an ISO 8601 date-time such as 2026-11-22T10:00:00Z' }
  }
  return {
    appId: event.appId,
    versionId: event.versionId as string | undefined,
    version: event.version as string | undefined,
    platform: event.platform,
    event: event.event as DeviceEvent,
    channel: event.channel as string | undefined,
    deviceId: event.deviceId as string | undefined,
    hostVersion: event.hostVersion as string | undefined,
    message: event.message as string | undefined,
    at: event.at as string | undefined,
  }
}
