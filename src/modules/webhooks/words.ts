// The words of a webhook delivery's status, shared by the console and the CLI (pure, imports nothing).

/** A delivery's status as the API answers it; `--json` and the API keep these values. */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed'

const deliveryStatusWords: Record<DeliveryStatus, string> = { pending: 'Pending (retrying)', delivered: 'Delivered', failed: 'Failed' }

/** "Pending (retrying)", "Delivered", "Failed": the console's Status column and `miniship webhooks deliveries`. */
export function deliveryStatusText(status: string): string {
  return deliveryStatusWords[status as DeliveryStatus] ?? status
}
