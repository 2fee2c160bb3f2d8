// Reading a password: all of stdin when piped, or a hidden prompt on a terminal (create-admin and the developer's login).

/** What `--password-stdin` reads: all of stdin, without the one newline `echo` or a file ends with. */
export function passwordFromStdinText(text: string): string {
  return text.replace(/\r?\n$/, '')
}

/** A raw-mode prompt on the terminal: nothing echoed, Backspace works, Ctrl-C cancels. */
export function promptHiddenOnTerminal(label: string, cancelled: () => Error): Promise<string> {
  const stdin = process.stdin
  process.stderr.write(label)
  stdin.setRawMode(true)
  stdin.resume()
  stdin.setEncoding('utf8')
  return new Promise((resolve, reject) => {
    let value = ''
    const finish = () => {
      stdin.off('data', onData)
      stdin.setRawMode(false)
      stdin.pause()
      process.stderr.write('\n')
    }
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n') {
          finish()
          resolve(value)
          return
        }
        if (char === '\u0003' || (char === '\u0004' && value === '')) {
          finish()
          reject(cancelled())
          return
        }
        if (char === '\u007f' || char === '\b') value = Array.from(value).slice(0, -1).join('')
        else if (char >= ' ') value += char
      }
    }
    stdin.on('data', onData)
  })
}
