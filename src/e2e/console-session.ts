// A describe block's console and browser: the fixture server and Chromium started before its tests,
// each test's page problems (console errors, failed requests) checked after it, and everything closed
// at the end. Shared by the console's browser tests.
import { afterAll, afterEach, beforeAll, expect } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { launchChromium, PageWatch } from './browser-support'
import { signIn, startConsoleFixture, type ConsoleFixture } from './console-fixture'

export interface ConsoleSession {
  /** set once the block's tests run */
  fixture: ConsoleFixture
  browser: Browser
  watch: PageWatch
  /** contexts a test opened: closed at the end */
  contexts: BrowserContext[]
  /** a page of a new context at `viewport`, watched, signed in (with `clipboard`, allowed to read and write it) */
  signedInPage(viewport: { width: number; height: number }, options?: { clipboard?: boolean }): Promise<Page>
}

export function consoleSession(options: { seed?: boolean; serverArgs?: string[]; prepare?: (fixture: ConsoleFixture) => void | Promise<void> } = {}): ConsoleSession {
  const session = { watch: new PageWatch(), contexts: [] } as unknown as ConsoleSession
  session.signedInPage = async (viewport, pageOptions = {}) => {
    const context = await session.browser.newContext({ viewport })
    if (pageOptions.clipboard) await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: session.fixture.base })
    session.watch.attach(context)
    session.contexts.push(context)
    const page = await context.newPage()
    await signIn(page, session.fixture.base)
    return page
  }
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
