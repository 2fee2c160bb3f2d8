// Opaque, unguessable, time-ordered identifiers (UUIDv7: 48-bit time, 74 random bits).
export function newId(): string {
  return Bun.randomUUIDv7()
}

/** Milliseconds since the epoch; services take one so tests can move time. */
export type Clock = () => number

export const systemClock: Clock = () => Date.now()

export function isoAt(clock: Clock): string {
  return new Date(clock()).toISOString()
}
