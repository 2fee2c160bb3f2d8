// Progress for long CLI work: one self-overwriting line on a terminal, nothing when stderr is piped.

export interface Progress {
  (line: string): void
  /** clears the line before the final message */
  done(): void
}

export function terminalProgress(stream: NodeJS.WriteStream = process.stderr): Progress {
  const tty = stream.isTTY === true
  let shown = false
  const progress = ((line: string) => {
    if (!tty) return
    stream.write(`\r\x1b[K${line}`)
    shown = true
  }) as Progress
  progress.done = () => {
    if (shown) stream.write('\r\x1b[K')
    shown = false
  }
  return progress
}

/**
 * On SIGINT/SIGTERM, removes what an unfinished backup or restore wrote (its `.partial` archive,
 * its staging directory) before exiting, so an interruption leaves nothing half-made behind.
 * Returns the function that uninstalls the handlers.
 */
export function removeOnInterrupt(paths: Set<string>, remove: (path: string) => void): () => void {
  const handler = (signal: NodeJS.Signals) => {
    for (const path of paths) remove(path)
    process.stderr.write(`\nminiship: interrupted by ${signal}; nothing was left half-written\n`)
    process.exit(signal === 'SIGINT' ? 130 : 143)
  }
  process.once('SIGINT', handler)
  process.once('SIGTERM', handler)
  return () => {
    process.off('SIGINT', handler)
    process.off('SIGTERM', handler)
  }
}
