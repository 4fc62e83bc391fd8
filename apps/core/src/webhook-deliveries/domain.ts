import type { Domain } from "../domain.js";
import { ensureDeliveryIndexes } from "./queue.js";

/**
 * Webhook delivery, the stored side of the toolkit in webhooks/: the relay's fan-out (fanout.ts), the
 * deliveries queue (queue.ts) and the attempts it records (attempt.ts). Worker processes run the queue
 * (worker/tasks/deliveries.ts); the endpoints kind serves attempts, resend and recover. Core serves nothing
 * of its own here, only declares the indexes of the queue and the attempts, so they exist whether or not a
 * worker has started yet.
 */
export const webhookDeliveriesDomain: Domain = {
  name: "webhook-deliveries",
  files: [],
  services: [],
  open({ db }) {
    return { ensureIndexes: () => ensureDeliveryIndexes(db), implementations: [] };
  },
};
