// Progress on a terminal for the developer CLI: a spinner while waiting, a bar with bytes and speed while uploading; silent when stderr is piped.
import { terminalProgress } from '../terminal/progress'

const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`
  if (bytes < 1024 * 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MB`
  return `${(bytes / 1024 / 1024 / 1024).toFixed(2)} GB`
}

export interface Spinner {
  stop(): void
}

export function startSpinner(label: string, stream: NodeJS.WriteStream = process.stderr): Spinner {
  const progress = terminalProgress(stream)
  if (stream.isTTY !== true) return { stop() {} }
  let frame = 0
  const timer = setInterval(() => progress(`${frames[frame++ % frames.length]} ${label}`), 100)
  return {
    stop() {
      clearInterval(timer)
      progress.done()
    },
  }
}

/** "[#####-----]  52%  104.0 MB / 200.0 MB  41.2 MB/s", redrawn at most ten times a second. */
export function transferBar(total: number, stream: NodeJS.WriteStream = process.stderr) {
  const progress = terminalProgress(stream)
  const started = performance.now()
  let last = 0
  let sent = 0
  const draw = () => {
    const fraction = total === 0 ? 1 : Math.min(1, sent / total)
    const width = 24
    const filled = Math.round(fraction * width)
    const seconds = (performance.now() - started) / 1000
    const speed = seconds > 0 ? sent / seconds : 0
    progress(`[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(Math.floor(fraction * 100)).padStart(3)}%  ${formatBytes(sent)} / ${formatBytes(total)}  ${formatBytes(speed)}/s`)
  }
  return {
    advance(bytes: number) {
      sent += bytes
      const now = performance.now()
      if (now - last >= 100) {
        last = now
        draw()
      }
    },
    done() {
      progress.done()
    },
  }
}
