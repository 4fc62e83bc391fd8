import { WebhookEndpointService } from "@rms/proto";
import { ADMIN_AND_GATEWAY as both, serviceDomain } from "../domain.js";
import { AttemptStore } from "./attempts.js";
import { webhookEndpointService } from "./service.js";
import { WebhookEndpointStore } from "./store.js";

/** Webhook endpoints: where events are delivered and the secrets that sign them (CONTRACT.md section 7, in ../shared/docs/). */
export const webhookEndpointsDomain = serviceDomain({
  name: "webhook-endpoints",
  service: WebhookEndpointService,
  roles: {
    createWebhookEndpoint: both,
    getWebhookEndpoint: both,
    updateWebhookEndpoint: both,
    deleteWebhookEndpoint: both,
    listWebhookEndpoints: both,
    rotateWebhookEndpointSecret: both,
    listWebhookAttempts: both,
    recoverWebhookEndpoint: both,
    resendEvent: both,
  },
  open({ db, settings, checkKey, logger }) {
    const store = new WebhookEndpointStore(db);
    const attempts = new AttemptStore(db);
    return { indexes: store, implementation: webhookEndpointService({ store, attempts, db, settings, checkKey, logger }) };
  },
});
