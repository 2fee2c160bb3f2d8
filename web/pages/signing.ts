// The Settings tab's Signing card (decisions §14): the public keys the miniapp trusts (add, revoke),
// and the requireSignature switch. Private keys never come here: `miniship keys generate` makes them.
import { api, seg, type MiniApp, type SigningKey, type Version } from '../api.ts'
import { ago, confirmDialog, field, h, onSubmit, showError, showNotice, time } from '../dom.ts'
import type { PageContext } from '../router.ts'

/** The badge of a version's signature in the Versions table: which key signed it, or that nothing did. */
export function signatureBadge(v: Version): HTMLElement | null {
  // servers without signing send no `signature` at all
  if (v.signature === undefined) return null
  const testId = `signature-${v.version}`
  if (v.signature === null) return h('span', { class: 'badge unsigned', 'data-testid': testId, 'data-signed': 'false', title: 'No signature: devices that pin a key refuse it' }, 'Unsigned')
  const s = v.signature
  const who = s.keyName ? `${s.keyName} (${s.keyId})` : s.keyId
  return h(
    'span',
    { class: `badge signed${s.keyRevokedAt ? ' revoked' : ''}`, 'data-testid': testId, 'data-signed': 'true', 'data-key-id': s.keyId, title: `Signed ${s.signedAt} with the Ed25519 key ${s.keyId}${s.keyRevokedAt ? `, revoked since ${s.keyRevokedAt}` : ''}` },
    s.keyRevokedAt ? `Signed by revoked key ${who}` : `Signed · ${who}`,
  )
}

export type KeysResult = { ok: true; keys: SigningKey[] } | { ok: false; error: unknown }

export function signingSection(ctx: PageContext, base: string, miniApp: MiniApp, result: KeysResult, canManage: boolean): HTMLElement {
  const section = h('section', { class: 'card narrow', 'aria-labelledby': 'signing-title', 'data-testid': 'signing' }, h('h2', { id: 'signing-title' }, 'Signing'))
  section.append(
    h(
      'p',
      { class: 'hint' },
      'Signed versions carry an Ed25519 signature over the digests of their files. A host app that pins one of these public keys refuses files changed on the server, in the bucket or on a CDN. Make a key with ',
      h('code', null, 'miniship keys generate'),
      ' and sign with ',
      h('code', null, 'miniship push --sign-key FILE'),
      '.',
    ),
  )

  if (typeof miniApp.requireSignature === 'boolean') {
    const form = h(
      'form',
      { 'data-testid': 'require-signature-form', novalidate: true },
      h(
        'div',
        { class: 'field' },
        h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'requireSignature', 'data-testid': 'require-signature', checked: miniApp.requireSignature, disabled: !canManage }), ' Require signed versions'),
        h('p', { class: 'hint' }, 'On: unsigned uploads are refused, and an unsigned version cannot be published or rolled back to (sign it first with miniship sign). Only owners change this.'),
      ),
      canManage ? h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'secondary', 'data-testid': 'require-signature-submit' }, 'Save')) : null,
    )
    onSubmit(form, async (values) => {
      const wanted = values.requireSignature === 'on'
      if (wanted === miniApp.requireSignature) {
        showNotice('Nothing to save: the switch was not changed.')
        return
      }
      await api('PATCH', base, { requireSignature: wanted })
      showNotice(wanted ? 'Unsigned versions are now refused.' : 'Unsigned versions are accepted again.')
      ctx.reload()
    })
    section.append(form)
  }

  section.append(h('h3', null, 'Trusted keys'))
  if (!result.ok) {
    section.append(h('p', { class: 'hint', 'data-testid': 'signing-keys-unavailable' }, `The keys could not be loaded: ${result.error instanceof Error ? result.error.message : String(result.error)}`))
    return section
  }
  // the words of `miniship keys ls` / `keys require` (NO_TRUSTED_KEY): the server allows this state, but nothing can then ship
  if (miniApp.requireSignature === true && !result.keys.some((key) => !key.revokedAt)) {
    section.append(h('p', { class: 'warning', role: 'status', 'data-testid': 'signing-no-trusted-key' }, `${miniApp.appId} requires signed versions and trusts no signing key: nothing can be uploaded, published or rolled back to until an owner or an administrator adds one.`))
  }
  if (result.keys.length === 0) section.append(h('p', { class: 'empty', 'data-testid': 'signing-keys-empty' }, 'No key yet: versions cannot be signed until an owner adds one.'))
  else
    section.append(
      h(
        'ul',
        { class: 'members signing-keys', 'data-testid': 'signing-keys' },
        result.keys.map((key) => {
          const revoke = canManage && !key.revokedAt ? h('button', { type: 'button', class: 'danger-outline small', 'data-testid': `revoke-signing-key-${key.keyId}` }, 'Revoke…') : null
          revoke?.addEventListener('click', () => {
            void (async () => {
              const ok = await confirmDialog({
                title: `Revoke the key “${key.name}”?`,
                message: [
                  h('p', null, `Key ${key.keyId} signs nothing from now on: uploads and publishes signed by it are refused. It stays listed, and versions it signed keep their signature.`),
                  h('p', null, 'Devices that pin it keep trusting it until the host app ships without it.'),
                ],
                confirmLabel: 'Revoke key',
                danger: true,
              })
              if (!ok) return
              revoke.disabled = true
              try {
                const answer = await api<{ warnings?: { code: string; message: string }[] }>('DELETE', `${base}/signing-keys/${seg(key.keyId)}`)
                // the versions it signed that devices get now (LIVE_RELEASE_KEY_REVOKED), in the words keys revoke prints
                showNotice(`Revoked the key ${key.name} (${key.keyId}).`, answer.warnings ?? [])
                ctx.reload()
              } catch (error) {
                showError(error)
                revoke.disabled = false
              }
            })()
          })
          return h(
            'li',
            { 'data-testid': `signing-key-${key.keyId}`, 'data-revoked': key.revokedAt ? 'true' : 'false' },
            h('span', { class: 'member-name' }, `${key.name} `, h('code', { class: 'muted' }, key.keyId), h('br'), h('code', { class: 'public-key', title: 'Public key (base64): pin it in the host app' }, key.publicKey)),
            key.revokedAt ? h('span', { class: 'badge revoked' }, 'Revoked ', ago(key.revokedAt)) : h('span', { class: 'badge' }, 'Trusted since ', time(key.createdAt)),
            revoke,
          )
        }),
      ),
    )
  if (!canManage) return section
  const form = h(
    'form',
    { 'data-testid': 'add-signing-key-form', novalidate: true, class: 'inline-form' },
    field('Name', h('input', { name: 'name', type: 'text', required: true, autocomplete: 'off', placeholder: 'release laptop' })),
    field('Public key (base64)', h('input', { name: 'publicKey', type: 'text', required: true, autocomplete: 'off', spellcheck: false }), 'What miniship keys generate printed: 44 characters ending in “=”.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'add-signing-key-submit' }, 'Add key')),
  )
  onSubmit(form, async (values) => {
    const added = await api<SigningKey>('POST', `${base}/signing-keys`, { name: (values.name ?? '').trim(), publicKey: (values.publicKey ?? '').trim() })
    showNotice(`Added the key ${added.name} (${added.keyId}).`)
    ctx.reload()
  })
  section.append(h('h3', null, 'Add a key'), form)
  return section
}
