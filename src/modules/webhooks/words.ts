// The words of a webhook delivery's status, shared by the console and the CLI (pure, imports nothing).

/** A delivery's status as the API answers it; `--json` and the API keep these values. */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed'

const deliveryStatusWords: Record<DeliveryStatus, string> = { pending: 'Pending (retrying)', delivered: 'Delivered', failed: 'Failed' }

/**
 * "Pending", "Pending (retrying)", "Delivered", "Failed": the console's Status column and `miniship
 * webhooks deliveries`. A pending delivery not tried yet (`attempts` 0) is only "Pending".
 */
export function deliveryStatusText(status: string, attempts?: number): string {
  if (status === 'pending' && attempts === 0) return 'Pending'
  return deliveryStatusWords[status as DeliveryStatus] ?? status
}
