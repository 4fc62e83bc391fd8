import { WebhookEndpointService, file_rms_v1_webhook_endpoints } from "@rms/proto";
import { implement, serviceEntry, type Domain } from "../domain.js";
import { webhookEndpointService } from "./service.js";
import { WEBHOOK_ENDPOINTS_COLLECTION, WebhookEndpointStore } from "./store.js";
import { AttemptStore } from "./attempts.js";

const both = ["admin", "gateway"] as const;

/** Webhook endpoints: where events are delivered and the secrets that sign them (CONTRACT.md section 7, in ../shared/docs/). */
export const webhookEndpointsDomain: Domain = {
  name: "webhook-endpoints",
  files: [file_rms_v1_webhook_endpoints],
  services: [
    serviceEntry(WebhookEndpointService, {
      createWebhookEndpoint: both,
      getWebhookEndpoint: both,
      updateWebhookEndpoint: both,
      deleteWebhookEndpoint: both,
      listWebhookEndpoints: both,
      rotateWebhookEndpointSecret: both,
      listWebhookAttempts: both,
      recoverWebhookEndpoint: both,
      resendEvent: both,
    }),
  ],
  // `webhook_endpoint.disabled`, recorded with the write of delivery that disables an endpoint.
  outboxes: [WEBHOOK_ENDPOINTS_COLLECTION],
  open(context) {
    const store = new WebhookEndpointStore(context.db);
    return {
      ensureIndexes: () => store.ensureIndexes(),
      implementations: [
        implement(
          WebhookEndpointService,
          webhookEndpointService({
            store,
            attempts: new AttemptStore(context.db),
            db: context.db,
            settings: context.settings,
            checkKey: context.checkKey,
            logger: context.logger,
            written: context.written,
            ...(context.relayNow ? { relayNow: context.relayNow } : {}),
          }),
        ),
      ],
    };
  },
};
