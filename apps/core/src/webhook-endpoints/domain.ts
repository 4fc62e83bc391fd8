import { WebhookEndpointService } from "@rms/proto";
import { OPERATOR_AND_GATEWAY as both, serviceDomain } from "../domain.js";
import { AttemptStore } from "./attempts.js";
import { webhookEndpointService } from "./service.js";
import { WEBHOOK_ENDPOINTS_COLLECTION, WebhookEndpointStore } from "./store.js";

/** Webhook endpoints: where events are delivered and the secrets that sign them (CONTRACT.md section 7, in ../shared/docs/). */
export const webhookEndpointsDomain = serviceDomain({
  name: "webhook-endpoints",
  service: WebhookEndpointService,
  callers: {
    createWebhookEndpoint: both,
    getWebhookEndpoint: both,
    updateWebhookEndpoint: both,
    deleteWebhookEndpoint: both,
    listWebhookEndpoints: both,
    rotateWebhookEndpointSecret: both,
    listWebhookAttempts: both,
    recoverWebhookEndpoint: both,
    resendEvent: both,
    getWebhookEndpointDeliveryStats: both,
    listEventDeliveries: both,
  },
  // `webhook_endpoint.disabled`, recorded with the write of delivery that disables an endpoint.
  outboxes: [WEBHOOK_ENDPOINTS_COLLECTION],
  open({ db, settings, checkKey, logger, written, relayNow }) {
    const store = new WebhookEndpointStore(db);
    const attempts = new AttemptStore(db);
    const deps = { store, attempts, db, settings, checkKey, logger, written, ...(relayNow ? { relayNow } : {}) };
    return { indexes: store, implementation: webhookEndpointService(deps) };
  },
});
