// The Webhooks section of a miniapp's settings (decisions §16): add (the secret shown once), list, send a test, deliveries, delete.
import type { Static } from 'elysia'
import type { deliveryRecord, webhookRecord } from '../../src/modules/webhooks/model.ts'
import { deliveryStatusText } from '../../src/modules/webhooks/words.ts'
import { api, ApiError, seg } from '../api.ts'
import { clear, confirmDialog, copyText, field, h, onSubmit, showError, showNotice, time } from '../dom.ts'

const EVENTS: [string, string][] = [
  ['version.uploaded', 'a version is uploaded'],
  ['release.published', 'a version is published'],
  ['release.rolled_back', 'a channel is rolled back'],
  ['rollout.changed', 'a rollout’s percent changes'],
  ['rollout.paused', 'a rollout is paused'],
]

/** A webhook and a delivery as the server answers them (webhooks/model.ts). */
type Webhook = Static<typeof webhookRecord>
type Delivery = Static<typeof deliveryRecord>

/** The section; it loads the webhooks itself and redraws in place after each change. */
export function webhooksSection(base: string, canManage: boolean): HTMLElement {
  const section = h('section', { class: 'card', 'aria-labelledby': 'webhooks-title', 'data-testid': 'webhooks' }, h('h2', { id: 'webhooks-title' }, 'Webhooks'))
  if (!canManage) {
    section.append(h('p', { class: 'hint', 'data-testid': 'webhooks-unavailable' }, 'Only the miniapp’s owners and administrators can see and change its webhooks.'))
    return section
  }
  const path = `${base}/webhooks`
  const list = h('div', { 'data-testid': 'webhooks-list' }, h('p', { class: 'hint' }, 'Loading…'))
  const created = h('div', { 'aria-live': 'polite' })

  async function load(): Promise<void> {
    try {
      const { webhooks } = await api<{ webhooks: Webhook[] }>('GET', path)
      clear(list, webhooks.length === 0 ? h('p', { class: 'hint', 'data-testid': 'webhooks-empty' }, 'No webhooks yet.') : h('ul', { class: 'webhooks' }, webhooks.map(row)))
    } catch (error) {
      const text = error instanceof ApiError && error.status === 403 ? 'Only the miniapp’s owners and administrators can see and change its webhooks.' : `The webhooks could not be loaded: ${error instanceof Error ? error.message : String(error)}`
      clear(list, h('p', { class: 'hint' }, text))
    }
  }

  function row(hook: Webhook): HTMLElement {
    const deliveries = h('div', { 'data-testid': `webhook-deliveries-${hook.id}` })
    const test = h('button', { type: 'button', class: 'secondary small', 'data-testid': `webhook-test-${hook.id}` }, 'Send test')
    const show = h('button', { type: 'button', class: 'secondary small', 'data-testid': `webhook-show-deliveries-${hook.id}` }, 'Deliveries')
    const remove = h('button', { type: 'button', class: 'danger-outline small', 'data-testid': `webhook-delete-${hook.id}` }, 'Delete…')
    const showDeliveries = async () => {
      const { deliveries: items } = await api<{ deliveries: Delivery[] }>('GET', `${path}/${seg(hook.id)}/deliveries`)
      clear(deliveries, items.length === 0 ? h('p', { class: 'hint' }, 'No deliveries yet.') : deliveriesTable(items))
    }
    test.addEventListener('click', () => {
      void (async () => {
        test.disabled = true
        try {
          await api('POST', `${path}/${seg(hook.id)}/test`)
          showNotice('Queued a test delivery (event webhook.test); its outcome shows under Deliveries in a moment.')
          // the worker sends it within a second or so
          await new Promise((resolve) => setTimeout(resolve, 1500))
          await showDeliveries()
        } catch (error) {
          showError(error)
        } finally {
          test.disabled = false
        }
      })()
    })
    show.addEventListener('click', () => void showDeliveries().catch(showError))
    remove.addEventListener('click', () => {
      void (async () => {
        const ok = await confirmDialog({
          title: 'Delete this webhook?',
          message: h('p', null, `${hook.url} stops receiving events, and its deliveries are removed, those waiting for a retry too.`),
          confirmLabel: 'Delete webhook',
          danger: true,
        })
        if (!ok) return
        try {
          await api('DELETE', `${path}/${seg(hook.id)}`)
          showNotice(`Deleted the webhook to ${hook.url}.`)
          // its secret, if it was just added, is of no use any more
          if (created.dataset.webhookId === hook.id) {
            clear(created)
            delete created.dataset.webhookId
          }
          await load()
        } catch (error) {
          showError(error)
        }
      })()
    })
    return h(
      'li',
      { 'data-testid': `webhook-${hook.id}` },
      h('div', null, h('code', { class: 'webhook-url' }, hook.url), ' ', h('span', { class: 'badge' }, hook.format === 'slack' ? 'Slack text' : 'JSON')),
      h('p', { class: 'hint' }, `Events: ${hook.events.join(', ')} · added `, time(hook.createdAt)),
      h('div', { class: 'actions' }, test, show, remove),
      deliveries,
    )
  }

  const form = h(
    'form',
    { 'data-testid': 'add-webhook-form', novalidate: true },
    field('Receiver URL', h('input', { name: 'url', type: 'url', required: true, placeholder: 'https://ci.example.com/miniship', autocomplete: 'off' }), 'An http(s) address on the internet. Addresses on this machine or a private network are refused unless the server allows them.'),
    h(
      'fieldset',
      { class: 'field' },
      h('legend', null, 'Events'),
      // the name and its meaning are one flex item beside the box, so the meaning wraps under the name, not in a column of its own
      EVENTS.map(([name, what]) => h('label', { class: 'check', 'data-testid': `webhook-event-${name}` }, h('input', { type: 'checkbox', name: 'events', value: name, checked: true }), h('span', null, h('code', null, name), ` — ${what}`))),
    ),
    field('Format', h('select', { name: 'format' }, h('option', { value: 'json' }, 'JSON (signed event)'), h('option', { value: 'slack' }, 'Slack text (Slack, Mattermost, Discord /slack)'))),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'add-webhook-submit' }, 'Add webhook')),
  )
  onSubmit(form, async (values) => {
    const events = new FormData(form).getAll('events').map(String)
    const hook = await api<Webhook & { secret: string }>('POST', path, { url: (values.url ?? '').trim(), events, format: values.format === 'slack' ? 'slack' : 'json' })
    form.reset()
    showNotice('Added the webhook. Copy its secret now: it is shown only once.')
    const copy = h('button', { type: 'button', class: 'primary small', 'data-testid': 'copy-webhook-secret' }, 'Copy')
    copy.addEventListener('click', () => void copyText(hook.secret, 'the secret', copy))
    created.dataset.webhookId = hook.id
    clear(
      created,
      h(
        'div',
        { class: 'card success new-key' },
        h('p', null, h('strong', null, `Signing secret of the webhook to ${hook.url}`), ' — copy it now, it is not shown again. The receiver checks X-Miniship-Signature with it.'),
        h('div', { class: 'command' }, h('code', { 'data-testid': 'new-webhook-secret' }, hook.secret), copy),
      ),
    )
    await load()
  })

  section.append(h('p', { class: 'hint' }, 'The server POSTs each event, signed with the webhook’s secret, after the change is saved; it retries for about an hour when the receiver is down.'), created, list, h('h3', null, 'Add a webhook'), form)
  void load()
  return section
}

function deliveriesTable(items: Delivery[]): HTMLElement {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'responsive' },
      h('thead', null, h('tr', null, ['Time', 'Event', 'Status', 'Attempts', 'Answer'].map((label) => h('th', { scope: 'col' }, label)))),
      h(
        'tbody',
        null,
        items.map((delivery) =>
          h(
            'tr',
            { 'data-testid': `delivery-${delivery.id}` },
            h('td', { 'data-label': 'Time' }, time(delivery.createdAt)),
            h('td', { 'data-label': 'Event' }, h('code', null, delivery.event)),
            h('td', { 'data-label': 'Status' }, deliveryStatusText(delivery.status, delivery.attempts)),
            h('td', { 'data-label': 'Attempts' }, String(delivery.attempts)),
            h('td', { 'data-label': 'Answer' }, delivery.responseStatus !== null ? `HTTP ${delivery.responseStatus}` : (delivery.error ?? '—')),
          ),
        ),
      ),
    ),
  )
}
