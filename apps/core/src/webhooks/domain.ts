import type { Domain } from "../domain.js";
import { ensureDeliveryIndexes } from "./worker.js";

/**
 * Webhook delivery as core sees it: no service of its own (the endpoints kind serves attempts, resend
 * and recover; worker processes deliver), only the indexes of the deliveries queue and the attempts, so
 * they exist whether or not a worker has started yet.
 */
export const webhookDeliveriesDomain: Domain = {
  name: "webhook-deliveries",
  files: [],
  services: [],
  open({ db }) {
    return { ensureIndexes: () => ensureDeliveryIndexes(db), implementations: [] };
  },
};
