import { signatureHeader } from "./signature.js";

/** The `User-Agent` of every delivery. */
export const WEBHOOK_USER_AGENT = "rms-webhooks/1.4";

/** What a delivery sends: the event's id, the attempt's time, the body, and the keys that sign it (newest first). */
export interface SignedDelivery {
  readonly eventId: string;
  readonly timestampSeconds: number;
  /** The event object as JSON text, exactly the bytes sent and signed. */
  readonly body: string;
  readonly keys: readonly string[];
}

/**
 * The headers of a webhook delivery (CONTRACT.md section 7, in ../shared/docs/): JSON, its length, the product's
 * user agent, and Standard Webhooks' `webhook-id`, `webhook-timestamp` and `webhook-signature`. Core's deliveries
 * and `rms listen`'s forwards send these same headers.
 */
export function deliveryHeaders(delivery: SignedDelivery): Record<string, string> {
  return {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(delivery.body, "utf8")),
    "user-agent": WEBHOOK_USER_AGENT,
    "webhook-id": delivery.eventId,
    "webhook-timestamp": String(delivery.timestampSeconds),
    "webhook-signature": signatureHeader(delivery.keys, delivery.eventId, delivery.timestampSeconds, delivery.body),
  };
}
