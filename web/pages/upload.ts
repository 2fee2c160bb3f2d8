// Upload from the browser: the five files (picked or dropped), version, changelog and channel,
// sent with a progress bar (bytes and speed); the server's field errors and warnings shown inline.
import { FILE_KEYS, uploadForm, type FileKey, type MiniApp, type UploadWarning, type Version } from '../api.ts'
import { clearFieldErrors, field, formatBytes, h, hideError, showFormError, showNotice } from '../dom.ts'
import { appPath } from '../router.ts'
import { fileFieldFor, pushCommandFor } from '../rules.ts'
import { signatureRequiredText } from '../../src/modules/signing/words.ts'
import { commandBox } from './tokens.ts'

const FILE_LABEL: Record<FileKey, string> = {
  bundleIos: 'iOS bundle',
  bundleAndroid: 'Android bundle',
  manifest: 'Manifest (app.json)',
  assetsIos: 'iOS assets (.zip)',
  assetsAndroid: 'Android assets (.zip)',
}

const ACCEPT: Record<FileKey, string> = {
  bundleIos: '.jsbundle,.bundle,.js,.hbc',
  bundleAndroid: '.bundle,.js,.hbc',
  manifest: '.json,application/json',
  assetsIos: '.zip,application/zip',
  assetsAndroid: '.zip,application/zip',
}

/**
 * A miniapp that requires signed versions refuses every upload from here (the console cannot sign):
 * instead of a form that can only be refused, the server's refusal up front, in its words, and the
 * command that signs (the Tokens page's).
 */
function signedOnly(miniApp: MiniApp): HTMLElement {
  return h(
    'section',
    { 'aria-labelledby': 'upload-title', class: 'card', 'data-testid': 'upload-signature-required' },
    h('h2', { id: 'upload-title' }, `Upload a version of ${miniApp.name}`),
    h('p', { 'data-testid': 'upload-signature-required-text' }, h('strong', null, signatureRequiredText(miniApp.appId, 'upload'))),
    h('p', null, 'The console cannot sign a version, so it cannot upload one here. Push it from the folder that holds the build, with your private key:'),
    commandBox(pushCommandFor(miniApp), 'upload-push-command', 'copy-upload-push', 'the push command'),
    h('p', { class: 'hint' }, h('code', null, 'miniship keys generate --out release.pem'), ' writes a key file; its public key goes in ', h('a', { href: appPath(miniApp.appId, 'settings') }, 'Settings › Signing'), '.'),
  )
}

export function uploadTab(miniApp: MiniApp, channels: string[] | null): HTMLElement {
  if (miniApp.requireSignature) return signedOnly(miniApp)
  const inputs = Object.fromEntries(FILE_KEYS.map((key) => [key, h('input', { type: 'file', name: key, accept: ACCEPT[key], required: true })])) as Record<FileKey, HTMLInputElement>
  const unmatched = h('p', { class: 'hint', 'aria-live': 'polite' })

  /** Puts dropped files into the inputs their names point to (DataTransfer is how a file input is filled). */
  function assign(files: FileList | File[]): void {
    const left: string[] = []
    for (const file of files) {
      const key = fileFieldFor(file.name)
      if (!key) {
        left.push(file.name)
        continue
      }
      const transfer = new DataTransfer()
      transfer.items.add(file)
      inputs[key].files = transfer.files
    }
    unmatched.textContent = left.length ? `Not recognised, choose them below: ${left.join(', ')}` : ''
  }

  const drop = h(
    'div',
    { class: 'drop-zone', 'data-testid': 'drop-zone' },
    h('p', null, h('strong', null, 'Drop the five build files here')),
    h('p', { class: 'hint' }, 'They are sorted by name: *.ios.jsbundle, *.android.bundle, app.json, assets-ios.zip, assets-android.zip. Or choose each one below.'),
    unmatched,
  )
  drop.addEventListener('dragover', (event) => {
    event.preventDefault()
    drop.classList.add('over')
  })
  drop.addEventListener('dragleave', () => drop.classList.remove('over'))
  drop.addEventListener('drop', (event) => {
    event.preventDefault()
    drop.classList.remove('over')
    if (event.dataTransfer?.files.length) assign(event.dataTransfer.files)
  })

  const progress = h('progress', { max: 1, value: 0, 'data-testid': 'upload-progress', hidden: true })
  const progressText = h('p', { class: 'hint', 'aria-live': 'polite' })
  const outcome = h('div', { 'aria-live': 'polite' })
  const submit = h('button', { type: 'submit', class: 'primary', 'data-testid': 'upload-submit' }, 'Upload')
  const listId = 'upload-channels'

  const form = h(
    'form',
    { 'data-testid': 'upload-form', novalidate: true, class: 'upload-form' },
    drop,
    h('div', { class: 'file-grid' }, FILE_KEYS.map((key) => field(FILE_LABEL[key], inputs[key]))),
    h(
      'div',
      { class: 'form-row' },
      field('Version', h('input', { name: 'version', type: 'text', required: true, autocomplete: 'off', spellcheck: 'false', placeholder: '1.4.0' }), 'MAJOR.MINOR.PATCH, such as 1.4.0 or 2.0.0-beta.1; the manifest may leave it out.'),
      channels
        ? field('Channel (optional)', h('input', { name: 'channel', type: 'text', autocomplete: 'off', list: listId, placeholder: 'stable' }), 'Where you mean to publish it; publishing can still pick another.')
        : null,
    ),
    channels ? h('datalist', { id: listId }, channels.map((c) => h('option', { value: c }))) : null,
    field('Changelog (optional)', h('textarea', { name: 'changelog', rows: 3 })),
    h('div', { class: 'actions' }, submit),
    progress,
    progressText,
    outcome,
  )

  form.addEventListener('submit', (event) => {
    event.preventDefault()
    if (submit.disabled) return
    clearFieldErrors(form)
    hideError()
    outcome.replaceChildren()
    const body = new FormData()
    for (const name of ['version', 'changelog', 'channel']) {
      const value = (form.elements.namedItem(name) as HTMLInputElement | null)?.value.trim()
      if (value) body.append(name, value)
    }
    // files last: the server reads the fields before the big parts arrive
    for (const key of FILE_KEYS) {
      const file = inputs[key].files?.[0]
      if (file) body.append(key, file, file.name)
    }
    submit.disabled = true
    progress.hidden = false
    progress.value = 0
    const started = performance.now()
    uploadForm<Version & { warnings?: UploadWarning[] }>(`/api/mini-apps/by-app-id/${encodeURIComponent(miniApp.appId)}/versions/upload`, body, ({ loaded, total }) => {
      progress.max = total || 1
      progress.value = loaded
      progress.dataset.loaded = String(loaded)
      progress.dataset.total = String(total)
      const seconds = (performance.now() - started) / 1000
      const speed = seconds > 0.2 ? ` · ${formatBytes(loaded / seconds)}/s` : ''
      progressText.textContent = `${formatBytes(loaded)} of ${formatBytes(total)}${speed}`
    })
      .then((version) => {
        const warnings = version.warnings ?? []
        form.reset()
        unmatched.textContent = ''
        progress.hidden = true
        progressText.textContent = ''
        showNotice(`Uploaded ${version.version} (build ${version.buildNumber}).`)
        outcome.replaceChildren(
          h(
            'div',
            { class: 'card success', 'data-testid': 'upload-done' },
            h('p', null, h('strong', null, `Version ${version.version} is uploaded as a draft.`), ' ', h('a', { href: appPath(miniApp.appId, 'versions') }, 'See it in the versions'), ' to install it on a test device, send it to review or publish it.'),
            warnings.length ? h('ul', { class: 'warnings', 'data-testid': 'upload-warnings' }, warnings.map((w) => h('li', { 'data-code': w.code }, w.message))) : null,
          ),
        )
      })
      .catch((error: unknown) => {
        progress.hidden = true
        progressText.textContent = ''
        showFormError(form, error)
      })
      .finally(() => {
        submit.disabled = false
      })
  })

  return h(
    'section',
    { 'aria-labelledby': 'upload-title', class: 'card' },
    h('h2', { id: 'upload-title' }, `Upload a version of ${miniApp.name}`),
    h('p', { class: 'hint' }, 'The new version starts as a draft: nobody gets it until it is published.'),
    form,
  )
}
