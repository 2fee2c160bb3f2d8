// The Administration page with more users than one page of the server's listing: every user can be
// reached (and disabled), not only the first page's.
import { describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { hasChromium } from './browser-support'
import { signIn } from './console-fixture'
import { consoleSession } from './console-session'

const EXTRA_USERS = 150

function addUsers(dataDir: string): void {
  const db = new Database(join(dataDir, 'miniship.db'))
  db.run('PRAGMA busy_timeout = 5000')
  const insert = db.query("INSERT INTO users (id, email, display_name, password_hash, role, status, token_version, created_at, updated_at) VALUES (?, ?, ?, 'not-a-hash', 'USER', 'ACTIVE', 1, ?, ?)")
  const start = Date.parse('2026-11-27T00:00:00.000Z')
  db.transaction(() => {
    for (let index = 0; index < EXTRA_USERS; index++) {
      const at = new Date(start + index * 1000).toISOString()
      insert.run(Bun.randomUUIDv7(), `user-${String(index).padStart(3, '0')}@example.com`, `User ${index}`, at, at)
    }
  })()
  db.close()
}

describe.skipIf(!hasChromium)('the Administration page pages its users', () => {
  // many accounts at once, straight into the running server's database (creating each through the
  // API hashes its password: minutes for 150); the server reads them like any other
  const session = consoleSession({ seed: false, prepare: (fixture) => addUsers(fixture.dataDir) })

  test('the first 100 are listed, "Show more users" adds the rest, and the last one can be disabled', async () => {
    const { fixture, browser, watch } = session
    const context = await browser.newContext()
    watch.attach(context)
    const page = await context.newPage()
    await signIn(page, fixture.base)
    await page.goto(`${fixture.base}/admin`)
    const table = page.getByTestId('users-table')
    await table.waitFor()
    expect(await table.locator('tbody tr').count()).toBe(100)
    expect(await page.locator('#users-title').textContent()).toBe('Users (the first 100)')
    const last = 'user-149@example.com'
    expect(await page.getByTestId(`user-row-${last}`).count()).toBe(0)

    await page.getByTestId('users-more').click()
    await page.getByTestId(`user-row-${last}`).waitFor()
    expect(await table.locator('tbody tr').count()).toBe(EXTRA_USERS + 1)
    expect(await page.locator('#users-title').textContent()).toBe(`Users (${EXTRA_USERS + 1})`)
    expect(await page.getByTestId('users-more').isHidden()).toBe(true)

    await page.getByTestId(`toggle-status-${last}`).click()
    await page.locator('dialog[open]').getByRole('button', { name: 'Disable account' }).click()
    await page.getByTestId('notice').filter({ hasText: `${last} is now disabled.` }).waitFor()
    const listing = await fixture.api('GET', '/api/admin/users?userLimit=1000', { token: fixture.token })
    expect(listing.body.users.find((user: { email: string }) => user.email === last).status).toBe('DISABLED')
    await context.close()
  })
})
