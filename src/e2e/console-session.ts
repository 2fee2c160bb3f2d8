// A describe block's console and browser: the fixture server and Chromium started before its tests,
// each test's page problems (console errors, failed requests) checked after it, and everything closed
// at the end. Shared by the console's browser tests.
import { afterAll, afterEach, beforeAll, expect } from 'bun:test'
import type { Browser, BrowserContext } from 'playwright-core'
import { launchChromium, PageWatch } from './browser-support'
import { startConsoleFixture, type ConsoleFixture } from './console-fixture'

export interface ConsoleSession {
  /** set once the block's tests run */
  fixture: ConsoleFixture
  browser: Browser
  watch: PageWatch
  /** contexts a test opened: closed at the end */
  contexts: BrowserContext[]
}

export function consoleSession(options: { seed?: boolean; serverArgs?: string[]; prepare?: (fixture: ConsoleFixture) => void | Promise<void> } = {}): ConsoleSession {
  const session = { watch: new PageWatch(), contexts: [] } as unknown as ConsoleSession
  beforeAll(async () => {
    session.fixture = await startConsoleFixture({ seed: options.seed, serverArgs: options.serverArgs })
    await options.prepare?.(session.fixture)
    session.browser = await launchChromium()
  }, 120_000)
  afterEach(async () => {
    await Bun.sleep(100)
    expect(session.watch.takeProblems()).toEqual([])
  })
  afterAll(async () => {
    for (const context of session.contexts) await context.close().catch(() => undefined)
    await session.browser?.close()
    await session.fixture?.stop()
  })
  return session
}
