// `miniship webhooks ls|create|rm|test|deliveries --app APPID`: a miniapp's webhooks (decisions §16), for its owners.
import { Command } from 'commander'
import { connect, withClientOptions, type ClientFlags } from './config'
import { timeText } from '../terminal/time'
import { CliError, createOutput, runClient, type ApiClient } from './http'
import { findMiniApp } from './publish'
import { asCommandGroup } from './command-group'
import { deliveryStatusText } from '../modules/webhooks/words'

const events = ['version.uploaded', 'release.published', 'release.rolled_back', 'rollout.changed', 'rollout.paused'] as const

interface Webhook {
  id: string
  url: string
  events: string[]
  format: string
  createdAt: string
  secret?: string
}

export interface Delivery {
  id: string
  event: string
  status: string
  attempts: number
  responseStatus: number | null
  error: string | null
  createdAt: string
  updatedAt: string
}

type AppFlags = ClientFlags & { app: string }

/** The API path of the miniapp's webhooks, found by its appId. */
/** A webhook id the app does not have: the server's message, and where the ids are (exit 1, --json keeps the server's error and adds the hint). */
export function explainWebhookNotFound(error: unknown, appId: string): never {
  if (error instanceof CliError && error.body?.code === 'WEBHOOK_NOT_FOUND') {
    const hint = `miniship webhooks ls --app ${appId} lists its webhooks`
    throw new CliError(error.exitCode, `${error.message}; ${hint}`, { ...error.body, hint })
  }
  throw error
}

async function webhooksPath(api: ApiClient, appId: string): Promise<string> {
  const app = await findMiniApp(api, appId)
  return `/mini-apps/${encodeURIComponent(app.id)}/webhooks`
}

function withAppOption(command: Command): Command {
  return withClientOptions(command).requiredOption('--app <appId>', 'the app id, e.g. com.example.shop')
}

/** Columns padded to their widest cell; the last one is left as it is. */
function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  '))
}

function parseEvents(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined
  const list = text.split(',').map((event) => event.trim()).filter((event) => event !== '')
  const unknown = list.filter((event) => !(events as readonly string[]).includes(event))
  if (list.length === 0 || unknown.length > 0) throw new CliError(2, `--events must list one or more of ${events.join(', ')}${unknown.length > 0 ? ` (not ${unknown.join(', ')})` : ''}`)
  return list
}

function lsCommand(): Command {
  return withAppOption(new Command('ls'))
    .description("list a miniapp's webhooks (their secrets are never shown again)")
    .addHelpText('after', '\nExample:\n  $ miniship webhooks ls --app com.example.shop')
    .action((flags: AppFlags) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const api = connect(flags)
        const { body } = await api.request<{ webhooks: Webhook[] }>('GET', await webhooksPath(api, flags.app))
        if (body.webhooks.length === 0) out.line(`${flags.app} has no webhooks; add one with miniship webhooks create --app ${flags.app} --url URL`)
        else for (const line of table([['ID', 'FORMAT', 'URL', 'EVENTS'], ...body.webhooks.map((hook) => [hook.id, hook.format, hook.url, hook.events.join(',')])])) out.line(line)
        out.result(body)
      }),
    )
}

function createCommand(): Command {
  return withAppOption(new Command('create'))
    .description('add a webhook; its signing secret is printed once')
    .requiredOption('--url <url>', "the receiver's http(s) URL")
    .option('--events <list>', `comma-separated events (default: all): ${events.join(', ')}`)
    .option('--format <format>', 'json (default) or slack (a { text } body for Slack, Mattermost or Discord /slack)', 'json')
    .addHelpText(
      'after',
      '\nExamples:\n  $ miniship webhooks create --app com.example.shop --url https://ci.example.com/miniship\n  $ miniship webhooks create --app com.example.shop --url https://hooks.slack.com/services/T0/B0/XYZ --format slack --events release.published,rollout.paused',
    )
    .action((flags: AppFlags & { url: string; events?: string; format: string }) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        if (flags.format !== 'json' && flags.format !== 'slack') throw new CliError(2, `--format must be json or slack, got "${flags.format}"`)
        // before any request: a bad --events was refused only once the miniapp had been looked up (a server down made it exit 3)
        const chosen = parseEvents(flags.events)
        const api = connect(flags)
        const { body } = await api.request<Webhook>('POST', await webhooksPath(api, flags.app), { json: { url: flags.url, events: chosen, format: flags.format } })
        out.line(`Added webhook ${body.id} → ${body.url} (${body.events.join(', ')}; ${body.format}).`)
        out.line(`Secret: ${body.secret}`)
        out.line('It is shown this once: give it to the receiver now, to check X-Miniship-Signature.')
        out.result(body)
      }),
    )
}

function rmCommand(): Command {
  return withAppOption(new Command('rm'))
    .description('remove a webhook and its deliveries, those waiting for a retry too')
    .argument('<id>', 'the webhook id (miniship webhooks ls shows it)')
    .addHelpText('after', '\nExample:\n  $ miniship webhooks rm 0199a1b2-… --app com.example.shop')
    .action((id: string, flags: AppFlags) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const api = connect(flags)
        const { body } = await api.request('DELETE', `${await webhooksPath(api, flags.app)}/${encodeURIComponent(id)}`).catch((error: unknown) => explainWebhookNotFound(error, flags.app))
        out.line(`Removed webhook ${id}.`)
        out.result(body)
      }),
    )
}

function testCommand(): Command {
  return withAppOption(new Command('test'))
    .description('send a webhook.test delivery to one webhook (miniship webhooks deliveries shows how it went)')
    .argument('<id>', 'the webhook id')
    .addHelpText('after', '\nExample:\n  $ miniship webhooks test 0199a1b2-… --app com.example.shop')
    .action((id: string, flags: AppFlags) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const api = connect(flags)
        const { body } = await api.request<Delivery>('POST', `${await webhooksPath(api, flags.app)}/${encodeURIComponent(id)}/test`).catch((error: unknown) => explainWebhookNotFound(error, flags.app))
        out.line(`Queued test delivery ${body.id}; see it with miniship webhooks deliveries ${id} --app ${flags.app}`)
        out.result(body)
      }),
    )
}

/** The deliveries as a table, their status in the console's words ("Pending", "Pending (retrying)", "Delivered", "Failed"). */
export function deliveryLines(deliveries: readonly Delivery[]): string[] {
  if (deliveries.length === 0) return ['No deliveries yet.']
  return table([
    ['TIME', 'EVENT', 'STATUS', 'ATTEMPTS', 'ANSWER'],
    ...deliveries.map((delivery) => [timeText(delivery.createdAt), delivery.event, deliveryStatusText(delivery.status, delivery.attempts), String(delivery.attempts), delivery.responseStatus !== null ? `HTTP ${delivery.responseStatus}` : (delivery.error ?? '—')]),
  ])
}

function deliveriesCommand(): Command {
  return withAppOption(new Command('deliveries'))
    .description("a webhook's latest 50 deliveries: event, status, attempts, the receiver's answer")
    .argument('<id>', 'the webhook id')
    .addHelpText('after', '\nExample:\n  $ miniship webhooks deliveries 0199a1b2-… --app com.example.shop --json')
    .action((id: string, flags: AppFlags) =>
      runClient(flags.json === true, async () => {
        const out = createOutput(flags.json === true)
        const api = connect(flags)
        const { body } = await api.request<{ deliveries: Delivery[] }>('GET', `${await webhooksPath(api, flags.app)}/${encodeURIComponent(id)}/deliveries`).catch((error: unknown) => explainWebhookNotFound(error, flags.app))
        for (const line of deliveryLines(body.deliveries)) out.line(line)
        out.result(body)
      }),
    )
}

export function webhooksCommand(): Command {
  const webhooks = new Command('webhooks')
    .description("a miniapp's webhooks: ls, create, rm, test, deliveries (owners and admins)")
    .addHelpText('after', '\nExamples:\n  $ miniship webhooks create --app com.example.shop --url https://ci.example.com/miniship\n  $ miniship webhooks ls --app com.example.shop')
    .addCommand(lsCommand())
    .addCommand(createCommand())
    .addCommand(rmCommand())
    .addCommand(testCommand())
    .addCommand(deliveriesCommand())
  return asCommandGroup(webhooks)
}
