// The first steps after set-up: a short checklist an administrator sees above the miniapps until
// every step is done or they hide it. What is done is read from the server where it can be (a
// miniapp exists, a version was uploaded) and otherwise remembered in this browser (the push command
// was copied, registration was decided), per user. On a server that signs releases a fourth step asks for a
// signing key, done once a miniapp trusts one (GET /api/mini-apps/{id}/signing-keys).
import type { Me, MiniApp } from './api.ts'
import { commandCode, copyText, h } from './dom.ts'
import { appPath } from './router.ts'
import { pushCommandFor } from './rules.ts'

/** What the steps look at to tell whether they are done. */
export interface ChecklistState {
  apps: MiniApp[]
  /** steps the user marked in this browser: `copy-push`, `registration` */
  marks: ReadonlySet<string>
  /** keys (not revoked) the miniapps trust; null on a server without signing, which leaves the step out */
  signingKeys: number | null
}

interface Step {
  id: string
  title: string
  done(state: ChecklistState): boolean
  /** false: not a step on this server */
  applies?(state: ChecklistState): boolean
  /** what to do, with the control that does it; `mark` records a step done in this browser */
  body(state: ChecklistState, mark: (id: string) => void): HTMLElement
}

const STEPS: Step[] = [
  {
    id: 'create-miniapp',
    title: 'Create a miniapp',
    done: (state) => state.apps.length > 0,
    body: () => h('p', null, 'Give it an App ID (such as ', h('code', null, 'com.example.shop'), ') with ', h('strong', null, 'New miniapp'), '. The host app and the command-line tool find it by that ID.'),
  },
  {
    id: 'copy-push',
    title: 'Copy the push command',
    // a version uploaded (by `miniship push` as the README has it, or the console) is this step done too:
    // one who pushed before opening this page is not told to copy the command that did it
    done: (state) => state.marks.has('copy-push') || state.apps.some((app) => app.currentExperienceVersionId !== null),
    body: (state, mark) => {
      // the Tokens page's command: it signs when the miniapp requires signed versions
      const command = pushCommandFor(state.apps[0])
      const copy = h('button', { type: 'button', class: 'secondary small', 'data-testid': 'checklist-copy-command' }, 'Copy')
      copy.addEventListener('click', () => void copyText(command, 'the push command', copy).then(() => mark('copy-push')))
      return h(
        'div',
        null,
        h('p', null, 'After ', commandCode(`miniship login --server ${location.origin}/api`), ', this uploads a build folder as a draft:'),
        h('div', { class: 'command' }, commandCode(command), copy),
        h('p', { class: 'hint' }, 'The Tokens page has both commands, and API keys for CI.'),
      )
    },
  },
  {
    id: 'registration',
    title: 'Decide who may create accounts',
    done: (state) => state.marks.has('registration'),
    body: (_state, mark) =>
      h(
        'div',
        null,
        h(
          'p',
          null,
          'Registration is open unless the server was started with ',
          commandCode('--registration closed'),
          ' (or ',
          h('code', null, 'MINISHIP_REGISTRATION=closed'),
          '): anyone who reaches this page can make an account, which sees only the miniapps it is added to. Closed, only administrators create accounts (on the Admin page).',
        ),
        h('div', { class: 'actions' }, h('button', { type: 'button', class: 'secondary small', 'data-testid': 'checklist-registration-done', on: { click: () => mark('registration') } }, 'Done: registration is as I want it')),
      ),
  },
  {
    id: 'signing-key',
    title: 'Add a signing key',
    applies: (state) => state.signingKeys !== null,
    done: (state) => (state.signingKeys ?? 0) > 0,
    body: (state) => {
      const app = state.apps[0]
      return h(
        'div',
        null,
        h('p', null, 'Signed versions let the host app refuse files changed on the server, the bucket or a CDN. Make a key pair on your machine (the private key never leaves it):'),
        h('div', { class: 'command' }, commandCode('miniship keys generate --out release.pem')),
        app
          ? h('p', null, 'then add its public key in ', h('a', { href: appPath(app.appId, 'settings'), 'data-testid': 'checklist-signing-link' }, `${app.name || app.appId} › Settings › Signing`), ' (or with ', commandCode(`miniship keys add --app ${app.appId} release.pem`), ').')
          : h('p', null, 'then, once a miniapp exists, add its public key in the miniapp’s Settings › Signing.'),
      )
    },
  },
]

interface Stored {
  marks: string[]
  dismissed: boolean
}

const storageKey = (me: Me) => `miniship.checklist.${me.id}`

function load(me: Me): Stored {
  try {
    const raw = JSON.parse(localStorage.getItem(storageKey(me)) ?? 'null') as Partial<Stored> | null
    return { marks: Array.isArray(raw?.marks) ? raw.marks.filter((m): m is string => typeof m === 'string') : [], dismissed: raw?.dismissed === true }
  } catch {
    return { marks: [], dismissed: false }
  }
}

function save(me: Me, stored: Stored): void {
  try {
    localStorage.setItem(storageKey(me), JSON.stringify(stored))
  } catch {
    // not remembered: the checklist comes back next time, which is harmless
  }
}

/**
 * The checklist for `me` on the miniapps page, or null: only administrators see it (the first
 * one signs in right after set-up), and only until every step is done or they hide it.
 */
export function firstStepsChecklist(me: Me | null, apps: MiniApp[], signingKeys: number | null = null): HTMLElement | null {
  if (!me || me.role !== 'ADMIN') return null
  const stored = load(me)
  if (stored.dismissed) return null
  const section = h('section', { class: 'card checklist', 'aria-labelledby': 'checklist-title', 'data-testid': 'checklist' })
  const draw = (): void => {
    const state: ChecklistState = { apps, marks: new Set(stored.marks), signingKeys }
    const steps = STEPS.filter((step) => step.applies?.(state) ?? true).map((step) => ({ step, done: step.done(state) }))
    if (steps.every((s) => s.done)) {
      section.remove()
      return
    }
    const mark = (id: string): void => {
      if (!stored.marks.includes(id)) stored.marks.push(id)
      save(me, stored)
      draw()
    }
    const hide = h('button', { type: 'button', class: 'secondary small', 'data-testid': 'checklist-dismiss' }, 'Hide these steps')
    hide.addEventListener('click', () => {
      stored.dismissed = true
      save(me, stored)
      section.remove()
    })
    const doneCount = steps.filter((s) => s.done).length
    section.replaceChildren(
      h('div', { class: 'section-head' }, h('h2', { id: 'checklist-title' }, 'First steps'), hide),
      h('p', { class: 'hint' }, `${doneCount} of ${steps.length} done. This list goes away once they are all done.`),
      h(
        'ol',
        { class: 'checklist-steps' },
        steps.map(({ step, done }) =>
          h(
            'li',
            { 'data-testid': `checklist-${step.id}`, 'data-done': String(done), class: done ? 'done' : undefined },
            h('span', { class: 'checklist-mark', 'aria-hidden': 'true' }, done ? '✓' : ''),
            h('div', { class: 'checklist-text' }, h('strong', null, step.title), done ? h('span', { class: 'checklist-sr' }, ' (done)') : null, done ? null : step.body(state, mark)),
          ),
        ),
      ),
    )
  }
  draw()
  return section.isConnected || section.childElementCount > 0 ? section : null
}

/** The Tokens page's own Copy of the push command counts too (the listener sits on the document: no page code to touch). */
/** Whether `me` may still see the checklist (an administrator who has not hidden it): the apps page then counts signing keys. */
export function checklistWanted(me: Me | null): boolean {
  return !!me && me.role === 'ADMIN' && !load(me).dismissed
}

export function followPushCommandCopies(me: () => Me | null): void {
  document.addEventListener('click', (event) => {
    const target = event.target instanceof Element ? event.target.closest('[data-testid="copy-push"]') : null
    const user = me()
    if (!target || !user) return
    const stored = load(user)
    if (!stored.marks.includes('copy-push')) save(user, { ...stored, marks: [...stored.marks, 'copy-push'] })
  })
}
