// Helpers for the browser tests: Debian's chromium through playwright-core, a watch on every page
// (console errors, uncaught exceptions, 4xx answers, request URLs) and screenshots under test-output/.
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'
export const hasChromium = existsSync(CHROMIUM)

/** Screenshots go to <repo>/test-output/screenshots, which .gitignore keeps out of git. */
export const screenshotDir = join(import.meta.dir, '..', '..', 'test-output', 'screenshots')

export function launchChromium(): Promise<Browser> {
  // executablePath is required: without it playwright looks for a browser download, which must never happen here
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
  })
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(screenshotDir, { recursive: true })
  await page.screenshot({ path: join(screenshotDir, `${name}.png`), fullPage: true })
}

/** Chromium's own line for a fetch answered 4xx; allowed only where the test provoked that answer. */
const FAILED_RESOURCE = /^Failed to load resource: the server responded with a status of (4\d\d) \([^)]*\)$/

interface ExpectedHttpError {
  status: number
  path: RegExp
  method: string
}

/**
 * Everything the pages of the suite did that a test must look at: console errors, uncaught
 * exceptions, 4xx/5xx answers nobody provoked, and every request URL (for the token and host checks).
 */
export class PageWatch {
  readonly requests: { method: string; url: string; resourceType: string }[] = []
  private problems: string[] = []
  private expected: ExpectedHttpError[] = []
  /** statuses of the provoked answers that came, and of Chromium's 4xx console lines (their order is not guaranteed) */
  private provoked: number[] = []
  private consoleStatuses: number[] = []

  /** Declares that the next matching answer is deliberately provoked (and so is Chromium's console line for it). */
  expectHttpError(method: string, path: RegExp, status: number): void {
    this.expected.push({ method, path, status })
  }

  attach(context: BrowserContext): void {
    context.on('page', (page) => this.attachPage(page))
    for (const page of context.pages()) this.attachPage(page)
  }

  private attachPage(page: Page): void {
    page.on('console', (message) => {
      if (message.type() !== 'error') return
      const text = message.text()
      const failed = FAILED_RESOURCE.exec(text)
      if (failed) this.consoleStatuses.push(Number(failed[1]))
      else this.problems.push(`console error on ${page.url()}: ${text}`)
    })
    page.on('pageerror', (error) => this.problems.push(`uncaught exception on ${page.url()}: ${error.stack ?? error.message}`))
    page.on('request', (request) => this.requests.push({ method: request.method(), url: request.url(), resourceType: request.resourceType() }))
    page.on('response', (response) => {
      const status = response.status()
      if (status < 400) return
      const url = new URL(response.url())
      const method = response.request().method()
      const index = this.expected.findIndex((e) => e.status === status && e.method === method && e.path.test(url.pathname))
      if (index === -1) {
        this.problems.push(`unexpected ${status} for ${method} ${url.pathname}${url.search}`)
        return
      }
      this.expected.splice(index, 1)
      this.provoked.push(status)
    })
  }

  /** Problems since the last call: a 4xx console line counts only against an answer the test provoked. */
  takeProblems(): string[] {
    const found = [...this.problems, ...this.expected.map((e) => `expected ${e.status} for ${e.method} ${e.path} did not happen`)]
    for (const status of this.consoleStatuses) {
      const index = this.provoked.indexOf(status)
      if (index === -1) found.push(`console error: Failed to load resource with status ${status}, not provoked by the test`)
      else this.provoked.splice(index, 1)
    }
    this.problems = []
    this.expected = []
    this.provoked = []
    this.consoleStatuses = []
    return found
  }
}
