// The release guard's words (decisions §15), one place for the server's audit text, the console's badge and the CLI: no imports, so the console bundles it too.

export interface GuardNumbers {
  failedDevices: number
  totalDevices: number
  failureRate: number
}

/** `rate` as a percentage with at most `decimals` decimals: (0.0857, 1) → "8.6 %", (0.05, 1) → "5 %". */
function percentAt(rate: number, decimals: number): string {
  return `${Number((rate * 100).toFixed(decimals))} %`
}

/** A threshold as set (0.05 → "5 %", 0.0525 → "5.25 %"): up to four decimals, so it is never shown rounded onto another value. */
export function thresholdText(rate: number): string {
  return percentAt(rate, 4)
}

/**
 * A failure rate: one decimal (0.0857 → "8.6 %"), or as many more (up to four) as it takes not to
 * read as the `threshold` it is above or below: 21 of 419 devices is "5.01 %", never "5 %" against a
 * threshold of 5 % (which would say the guard paused a release at its threshold, not above it).
 */
export function rateText(rate: number, threshold?: number): string {
  let decimals = 1
  if (threshold !== undefined && rate !== threshold) {
    while (decimals < 4 && percentAt(rate, decimals) === thresholdText(threshold)) decimals++
  }
  return percentAt(rate, decimals)
}

/** "12 of 140 devices failed (8.6 %)"; with the threshold it is set against, the rate never reads as that threshold unless it is it. */
export function failedText(count: GuardNumbers, threshold?: number): string {
  return `${count.failedDevices} of ${count.totalDevices} devices failed (${rateText(count.failureRate, threshold)})`
}

/** The badge of a release the guard paused: "paused by the release guard: 12 of 140 devices failed (8.6 %) — threshold 5 %". */
export function guardPauseText(trip: GuardNumbers & { maxFailureRate: number }): string {
  return `paused by the release guard: ${failedText(trip, trip.maxFailureRate)} — threshold ${thresholdText(trip.maxFailureRate)}`
}

/** "release guard on: pauses when more than 5 % of devices fail, once 20 devices reported" or "release guard off". */
export function guardStateText(guard: { enabled: boolean; maxFailureRate: number; minDevices: number }): string {
  return guard.enabled ? `release guard on: pauses when more than ${thresholdText(guard.maxFailureRate)} of devices fail, once ${guard.minDevices} devices reported` : 'release guard off'
}

/**
 * Why a rate over the threshold pauses nothing: a person resumed (or raised) the release at N failing
 * devices, and the guard pauses it again only once more fail. Null when nothing holds it back.
 */
export function heldText(guard: { heldAtFailedDevices?: number | null }): string | null {
  // a server from before the field answers without it
  const held = guard.heldAtFailedDevices
  return typeof held !== 'number' ? null : `held since a person resumed it at ${held} failing devices: it pauses again once more than ${held} fail`
}

/**
 * Whether the guard watches a release in this state: rolling out or complete. Paused or reverted it is
 * not watched (a reverted one cannot even be paused), so nothing there "pauses again".
 */
export function watchedState(state: string | null | undefined): boolean {
  return state === 'rolling-out' || state === 'complete'
}

/** Whether the last count is over the guard's line (T ≥ minDevices and F / T above the rate), the rule §15 pauses on. */
export function overThreshold(guard: { maxFailureRate: number; minDevices: number; lastCheck: GuardNumbers | null }): boolean {
  return guard.lastCheck !== null && guard.lastCheck.totalDevices >= guard.minDevices && guard.lastCheck.failureRate > guard.maxFailureRate
}
