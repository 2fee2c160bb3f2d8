// The release guard's words (decisions §15), one place for the server's audit text, the console's badge and the CLI: no imports, so the console bundles it too.

export interface GuardNumbers {
  failedDevices: number
  totalDevices: number
  failureRate: number
}

/** 0.0857 → "8.6 %", 0.05 → "5 %". */
export function percentText(rate: number): string {
  return `${Number((rate * 100).toFixed(1))} %`
}

/** "12 of 140 devices failed (8.6 %)" */
export function failedText(count: GuardNumbers): string {
  return `${count.failedDevices} of ${count.totalDevices} devices failed (${percentText(count.failureRate)})`
}

/** The badge of a release the guard paused: "paused by the release guard: 12 of 140 devices failed (8.6 %) — threshold 5 %". */
export function guardPauseText(trip: GuardNumbers & { maxFailureRate: number }): string {
  return `paused by the release guard: ${failedText(trip)} — threshold ${percentText(trip.maxFailureRate)}`
}

/** "release guard on: pauses when more than 5 % of devices fail, once 20 devices reported" or "release guard off". */
export function guardStateText(guard: { enabled: boolean; maxFailureRate: number; minDevices: number }): string {
  return guard.enabled ? `release guard on: pauses when more than ${percentText(guard.maxFailureRate)} of devices fail, once ${guard.minDevices} devices reported` : 'release guard off'
}
