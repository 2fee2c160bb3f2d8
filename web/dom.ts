// Small DOM helpers: element building without innerHTML, the alert and notice regions,
// inline field errors, the confirmation dialog and display formatting.
import { ApiError, type ErrorDetail, type Person } from './api.ts'

type Child = Node | string | number | null | undefined | false | Child[]
type AttrValue = string | number | boolean | null | undefined

export interface Attrs {
  [name: string]: AttrValue | Record<string, EventListener> | undefined
  /** Event listeners, added with addEventListener (never as inline attributes). */
  on?: Record<string, EventListener>
}

/**
 * Control characters (and the bidirectional overrides that can reorder a line) shown as visible
 * symbols, so a name cannot hide text or break the layout: U+0007 → ␇, U+202E → ⟨U+202E⟩.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u0080-\u009f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const code = c.charCodeAt(0)
    if (code < 0x20) return String.fromCharCode(0x2400 + code)
    if (code === 0x7f) return '\u2421'
    return `⟨U+${code.toString(16).toUpperCase().padStart(4, '0')}⟩`
  })
}

function append(parent: Node, child: Child): void {
  if (child === null || child === undefined || child === false) return
  if (Array.isArray(child)) {
    for (const c of child) append(parent, c)
    return
  }
  parent.appendChild(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(printable(String(child))) : child)
}

/** Builds an element: h('button', { class: 'primary', 'data-testid': 'x', on: { click } }, 'Label'). */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag)
  if (attrs) {
    for (const [name, value] of Object.entries(attrs)) {
      if (name === 'on') {
        for (const [event, listener] of Object.entries(value as Record<string, EventListener>)) {
          element.addEventListener(event, listener)
        }
      } else if (value === true) {
        element.setAttribute(name, '')
      } else if (value !== false && value !== null && value !== undefined) {
        element.setAttribute(name, String(value))
      }
    }
  }
  for (const child of children) append(element, child)
  return element
}

export function clear(element: Element, ...children: Child[]): void {
  element.replaceChildren()
  for (const child of children) append(element, child)
}

// ---- alert (errors) and notice (successes) -------------------------------------------------

function region(testId: string): HTMLElement {
  const element = document.querySelector<HTMLElement>(`[data-testid="${testId}"]`)
  if (!element) throw new Error(`missing #${testId} region in index.html`)
  return element
}

function dismissButton(testId: string, onDismiss: () => void): HTMLButtonElement {
  // the × is drawn by CSS so the region's text stays exactly the message
  return h('button', { type: 'button', class: 'dismiss', 'data-testid': testId, 'aria-label': 'Dismiss message', title: 'Dismiss', on: { click: onDismiss } })
}

/** Shows an error's message (or a sentence of our own) in the page-wide alert region (role="alert"). */
export function showError(error: unknown, unplaced: ErrorDetail[] = []): void {
  if (error instanceof ApiError && error.handled) return
  const message = error instanceof Error ? error.message : String(error)
  hideNotice()
  clear(
    region('alert'),
    h(
      'div',
      { class: 'message-text' },
      h('p', null, message || 'Something went wrong.'),
      // the code and status the CLI prints after the same message (`… (SIGNATURE_REQUIRED, HTTP 422)`), to look up
      // in docs/api.md or quote in a report; an answer with no code of its own (HTTP_502 from a proxy) has only its status
      error instanceof ApiError ? h('p', { class: 'error-code', 'data-testid': 'alert-code' }, error.code.startsWith('HTTP_') ? `(HTTP ${error.status})` : `(${error.code}, HTTP ${error.status})`) : null,
      unplaced.length ? h('ul', null, unplaced.map((d) => h('li', null, d.field ? `${d.field.replace(/^\//, '')}: ${d.message}` : d.message))) : null,
    ),
    dismissButton('alert-dismiss', hideError),
  )
  // an ApiError is an answer the page explains; any other exception is a bug worth a trace
  if (error instanceof Error && !(error instanceof ApiError)) console.warn(error)
}

export function hideError(): void {
  region('alert').replaceChildren()
}

/**
 * Shows a short success message (role="status"); it stays until dismissed or the next action. The
 * `warnings` an answer carried (`{ code, message }`, the words the CLI prints) are listed under it.
 */
export function showNotice(message: string, warnings: readonly { code: string; message: string }[] = []): void {
  hideError()
  clear(
    region('notice'),
    h(
      'div',
      { class: 'message-text' },
      h('p', null, message),
      warnings.length ? h('ul', { class: 'warnings', 'data-testid': 'notice-warnings' }, warnings.map((w) => h('li', { 'data-code': w.code }, w.message))) : null,
    ),
    dismissButton('notice-dismiss', hideNotice),
  )
}

export function hideNotice(): void {
  region('notice').replaceChildren()
}

// ---- forms ---------------------------------------------------------------------------------

let fieldErrorSeq = 0

export function clearFieldErrors(form: HTMLFormElement): void {
  for (const p of form.querySelectorAll('.field-error')) p.remove()
  for (const input of form.querySelectorAll('[aria-invalid]')) {
    input.removeAttribute('aria-invalid')
    const describedBy = (input.getAttribute('aria-describedby') ?? '')
      .split(' ')
      .filter((id) => id && !id.startsWith('field-error-'))
      .join(' ')
    if (describedBy) input.setAttribute('aria-describedby', describedBy)
    else input.removeAttribute('aria-describedby')
  }
}

/** TypeBox paths look like "/appId"; plain names like "appId". */
function fieldName(field: string): string {
  return field.replace(/^\//, '').split(/[/.[]/)[0] ?? ''
}

/**
 * Puts each `details[]` entry of a 400 under the input it names, and answers the ones that
 * matched no input so they can go into the alert instead.
 */
export function showFieldErrors(form: HTMLFormElement, details: ErrorDetail[]): ErrorDetail[] {
  clearFieldErrors(form)
  const unplaced: ErrorDetail[] = []
  let first: HTMLElement | null = null
  for (const detail of details) {
    const name = fieldName(detail.field)
    const input = name ? form.querySelector<HTMLElement>(`[name="${CSS.escape(name)}"]`) : null
    if (!input) {
      unplaced.push(detail)
      continue
    }
    const id = `field-error-${++fieldErrorSeq}`
    const p = h('p', { class: 'field-error', id, 'data-testid': `field-error-${name}` }, detail.message)
    input.insertAdjacentElement('afterend', p)
    input.setAttribute('aria-invalid', 'true')
    input.setAttribute('aria-describedby', `${input.getAttribute('aria-describedby') ?? ''} ${id}`.trim())
    first ??= input
  }
  first?.focus()
  return unplaced
}

/** Shows an API error: inline under the fields it names when it has details, and in the alert. */
export function showFormError(form: HTMLFormElement, error: unknown): void {
  const unplaced = error instanceof ApiError && error.details.length ? showFieldErrors(form, error.details) : []
  showError(error, unplaced)
}

export function formValues(form: HTMLFormElement): Record<string, string> {
  const values: Record<string, string> = {}
  for (const [key, value] of new FormData(form).entries()) {
    if (typeof value === 'string') values[key] = value
  }
  return values
}

/** Runs a submit handler with the submit button disabled, so double clicks send one request. */
export function onSubmit(form: HTMLFormElement, handler: (values: Record<string, string>) => Promise<void>): void {
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const buttons = [...form.querySelectorAll<HTMLButtonElement>('button[type="submit"]')]
    if (buttons.some((b) => b.disabled)) return
    for (const b of buttons) b.disabled = true
    clearFieldErrors(form)
    handler(formValues(form))
      .catch((error: unknown) => showFormError(form, error))
      .finally(() => {
        for (const b of buttons) b.disabled = false
      })
  })
}

let inputSeq = 0

/** A labelled input with an optional hint, wired with for/id and aria-describedby. */
export function field(
  label: string,
  input: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement,
  hint?: string,
): HTMLElement {
  const id = input.id || `input-${++inputSeq}`
  input.id = id
  let hintElement: HTMLElement | null = null
  if (hint) {
    hintElement = h('p', { class: 'hint', id: `${id}-hint` }, hint)
    input.setAttribute('aria-describedby', `${id}-hint`)
  }
  return h('div', { class: 'field' }, h('label', { for: id }, label), hintElement, input)
}

// ---- confirmation dialog -------------------------------------------------------------------

export interface DialogField {
  name: string
  label: string
  kind: 'textarea' | 'password' | 'text' | 'number' | 'checkbox' | 'select'
  hint?: string
  required?: boolean
  /** the initial value (for a checkbox: 'on' when checked) */
  value?: string
  min?: number
  max?: number
  placeholder?: string
  /** choices of a select; for a text field, suggestions (a datalist) */
  options?: { value: string; label: string }[]
}

let datalistSeq = 0

function dialogInput(f: DialogField): HTMLElement {
  const testId = `confirm-${f.name}`
  if (f.kind === 'textarea') {
    const area = h('textarea', { name: f.name, rows: 3, 'data-testid': testId })
    area.value = f.value ?? ''
    return field(f.label, area, f.hint)
  }
  if (f.kind === 'checkbox') {
    const box = h('input', { type: 'checkbox', name: f.name, checked: f.value === 'on', 'data-testid': testId })
    return h('div', { class: 'field' }, h('label', { class: 'check' }, box, ` ${f.label}`), f.hint ? h('p', { class: 'hint' }, f.hint) : null)
  }
  if (f.kind === 'select') {
    const select = h('select', { name: f.name, 'data-testid': testId }, (f.options ?? []).map((o) => h('option', { value: o.value }, o.label)))
    if (f.value !== undefined) select.value = f.value
    return field(f.label, select, f.hint)
  }
  const listId = f.options?.length ? `dialog-list-${++datalistSeq}` : undefined
  const input = h('input', {
    name: f.name,
    type: f.kind,
    required: f.required,
    min: f.min,
    max: f.max,
    placeholder: f.placeholder,
    list: listId,
    autocomplete: f.kind === 'password' ? 'new-password' : 'off',
    'data-testid': testId,
  })
  input.value = f.value ?? ''
  const wrapper = field(f.label, input, f.hint)
  if (listId) wrapper.append(h('datalist', { id: listId }, (f.options ?? []).map((o) => h('option', { value: o.value }, o.label))))
  return wrapper
}

export interface ConfirmOptions {
  title: string
  message: Child
  confirmLabel: string
  danger?: boolean
  fields?: DialogField[]
  /** data-testid of the dialog, `confirm-dialog` unless said */
  testId?: string
  /**
   * Checks the entered values before the dialog closes: answer the problems by field name (shown
   * under the inputs, the dialog stays open) or nothing to close.
   */
  validate?: (values: Record<string, string>) => ErrorDetail[]
  /** Told the entered values on every change, so the message can follow them (the rollback dialog's channel). */
  onValues?: (values: Record<string, string>) => void
}

/**
 * An in-page modal (native <dialog>) that asks before something that cannot be undone.
 * Resolves to the entered field values, or null when cancelled (Cancel button or Escape).
 */
export function confirmDialog(options: ConfirmOptions): Promise<Record<string, string> | null> {
  return new Promise((resolve) => {
    let result: Record<string, string> | null = null
    const inputs = (options.fields ?? []).map(dialogInput)
    const titleId = `dialog-title-${++inputSeq}`
    const cancel = h('button', { type: 'button', class: 'secondary', 'data-testid': 'confirm-cancel' }, 'Cancel')
    const form = h(
      'form',
      { class: 'dialog-form' },
      h('h2', { id: titleId }, options.title),
      h('div', { class: 'dialog-message' }, options.message),
      inputs,
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'submit', class: options.danger ? 'danger' : 'primary', 'data-testid': 'confirm-ok' }, options.confirmLabel),
        cancel,
      ),
    )
    const dialog = h('dialog', { 'aria-labelledby': titleId, 'data-testid': options.testId ?? 'confirm-dialog' }, form)
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null

    form.addEventListener('submit', (event) => {
      event.preventDefault()
      const values = formValues(form)
      const problems = options.validate?.(values) ?? []
      if (problems.length) {
        showFieldErrors(form, problems)
        return
      }
      result = values
      dialog.close()
    })
    cancel.addEventListener('click', () => dialog.close())
    if (options.onValues) {
      const tell = () => options.onValues!(formValues(form))
      form.addEventListener('input', tell)
      form.addEventListener('change', tell)
    }
    dialog.addEventListener('close', () => {
      dialog.remove()
      if (opener?.isConnected) opener.focus()
      resolve(result)
    })

    document.body.appendChild(dialog)
    dialog.showModal()
    const firstInput = form.querySelector<HTMLElement>('input, textarea, select')
    ;(firstInput ?? cancel).focus()
  })
}

/**
 * A modal that only shows something (the install QR code): a title, the content and a Close
 * button; Escape closes it too. Resolves once it is closed.
 */
export function infoDialog(title: string, content: Child, testId: string, actions: Child = null): Promise<void> {
  return new Promise((resolve) => {
    const titleId = `dialog-title-${++inputSeq}`
    const close = h('button', { type: 'button', class: 'secondary', 'data-testid': `${testId.replace(/-dialog$/, '')}-close` }, 'Close')
    const dialog = h('dialog', { 'aria-labelledby': titleId, 'data-testid': testId, class: 'info' }, h('h2', { id: titleId }, title), h('div', { class: 'dialog-message' }, content), h('div', { class: 'actions' }, actions, close))
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null
    close.addEventListener('click', () => dialog.close())
    dialog.addEventListener('close', () => {
      dialog.remove()
      if (opener?.isConnected) opener.focus()
      resolve()
    })
    document.body.appendChild(dialog)
    dialog.showModal()
    close.focus()
  })
}

/**
 * Copies `text`, saying so in the notice and on the button that asked (a dialog hides the notice),
 * or asking to copy by hand when the browser refuses.
 */
/**
 * A command in <code>, each word kept whole on a line (a browser would otherwise break `--app`
 * after its first hyphen, or `/api` after its `a`); a URL too long for the line breaks after a `/`
 * of its path, and only a word longer than the line with none, a 64-character App ID, wraps
 * anywhere. `attrs` go on the <code>.
 */
export function commandCode(command: string, attrs: Attrs = {}): HTMLElement {
  const words = command.split(' ')
  // a break is offered after each `/` that ends a path segment (not inside `//`)
  const pieces = (word: string) => word.split(/(?<=[^:/]\/)(?=[^/])/).flatMap((piece, index) => (index ? [h('wbr'), piece] : [piece]))
  return h('code', { ...attrs, class: ['command-words', attrs.class].filter(Boolean).join(' ') }, words.flatMap((word, index) => [index ? ' ' : '', h('span', null, ...pieces(word))]))
}

export async function copyText(text: string, what: string, button?: HTMLButtonElement): Promise<void> {
  try {
    await navigator.clipboard.writeText(text)
    showNotice(`Copied ${what}.`)
    if (button) button.textContent = 'Copied ✓'
  } catch {
    showError(`The browser did not allow copying. Select ${what} and copy it by hand.`)
  }
}

// ---- formatting ----------------------------------------------------------------------------

export function formatBytes(bytes: number | undefined | null): string {
  if (typeof bytes !== 'number' || !Number.isFinite(bytes)) return '—'
  if (bytes < 1024) return `${bytes} B`
  const units = ['KB', 'MB', 'GB']
  let value = bytes / 1024
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' })

/** A <time> element with the local date and the exact ISO timestamp as its datetime and tooltip. */
export function time(iso: string | null | undefined): HTMLElement | string {
  if (!iso) return '—'
  const date = new Date(iso)
  if (Number.isNaN(date.getTime())) return iso
  return h('time', { datetime: iso, title: iso }, dateFormat.format(date))
}

/** "3 minutes ago", "2 days ago": for last activity and last use, with the exact time as tooltip. */
export function ago(iso: string | null | undefined, now = Date.now()): HTMLElement | string {
  if (!iso) return '—'
  const at = Date.parse(iso)
  if (Number.isNaN(at)) return iso
  const seconds = Math.round((now - at) / 1000)
  const units: [number, string][] = [
    [60, 'second'],
    [60, 'minute'],
    [24, 'hour'],
    [30, 'day'],
    [12, 'month'],
    [Infinity, 'year'],
  ]
  let value = Math.abs(seconds)
  let unit = 'second'
  for (const [size, name] of units) {
    unit = name
    if (value < size) break
    value = Math.floor(value / size)
  }
  const text = value < 10 && unit === 'second' ? 'just now' : `${value} ${unit}${value === 1 ? '' : 's'} ${seconds >= 0 ? 'ago' : 'from now'}`
  return h('time', { datetime: iso, title: dateFormat.format(new Date(at)) }, text)
}

export function personName(person: Person | null | undefined): string {
  if (!person) return 'someone'
  return person.displayName ? `${person.displayName} (${person.email})` : person.email
}
