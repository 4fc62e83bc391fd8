import type { Scope } from "@rms/proto";

/**
 * The scope each tenant RPC needs of the key presented for it: core enforces key kind and scope per RPC, as the
 * gateway does per route, so a gateway credential plus a tenant's publishable key cannot write. Keyed by
 * the gRPC method path. The gateway's route table says the same (each `defineOperation`'s `scope`);
 * `clients/built-in.test.ts` checks that every tenant RPC core serves is listed here.
 */
export const RPC_SCOPES: Readonly<Record<string, Scope | null>> = {
  "/rms.v1.ResourceService/CreateResource": "resources:write",
  "/rms.v1.ResourceService/UpdateResource": "resources:write",
  "/rms.v1.ResourceService/DeleteResource": "resources:write",
  "/rms.v1.ResourceService/GetResource": "resources:read",
  "/rms.v1.ResourceService/ListResources": "resources:read",
  "/rms.v1.ResourceService/SearchResources": "resources:read",
  "/rms.v1.JobService/CreateJob": "jobs:write",
  "/rms.v1.JobService/PreviewJob": "jobs:write",
  "/rms.v1.JobService/CancelJob": "jobs:write",
  "/rms.v1.JobService/GetJob": "jobs:read",
  "/rms.v1.JobService/ListJobs": "jobs:read",
  "/rms.v1.JobService/ListJobErrors": "jobs:read",
  "/rms.v1.EventService/GetEvent": "events:read",
  "/rms.v1.EventService/ListEvents": "events:read",
  "/rms.v1.EventService/ReadEventLog": "events:read",
  "/rms.v1.WebhookEndpointService/CreateWebhookEndpoint": "webhooks:write",
  "/rms.v1.WebhookEndpointService/GetWebhookEndpoint": "webhooks:write",
  "/rms.v1.WebhookEndpointService/UpdateWebhookEndpoint": "webhooks:write",
  "/rms.v1.WebhookEndpointService/DeleteWebhookEndpoint": "webhooks:write",
  "/rms.v1.WebhookEndpointService/ListWebhookEndpoints": "webhooks:write",
  "/rms.v1.WebhookEndpointService/RotateWebhookEndpointSecret": "webhooks:write",
  "/rms.v1.WebhookEndpointService/ListWebhookAttempts": "webhooks:write",
  "/rms.v1.WebhookEndpointService/RecoverWebhookEndpoint": "webhooks:write",
  "/rms.v1.WebhookEndpointService/ResendEvent": "webhooks:write",
  "/rms.v1.WebhookEndpointService/GetWebhookEndpointDeliveryStats": "webhooks:write",
  "/rms.v1.WebhookEndpointService/ListEventDeliveries": "webhooks:write",
  "/rms.v1.FileService/UploadFile": "files:write",
  "/rms.v1.FileService/GetFile": "files:read",
  "/rms.v1.FileService/ListFiles": "files:read",
  "/rms.v1.FileService/DeleteFile": "files:write",
  "/rms.v1.FileService/ReadFile": "files:read",
  "/rms.v1.FileService/CreateUpload": "files:write",
  "/rms.v1.FileService/GetUpload": "files:read",
  "/rms.v1.FileService/UploadPart": "files:write",
  "/rms.v1.FileService/CompleteUpload": "files:write",
  "/rms.v1.FileService/CancelUpload": "files:write",
  "/rms.v1.FileService/AdmitUpload": "files:write",
  // Secret keys only (a dashboard session): the service checks the kind; the gateway's route names this scope.
  "/rms.v1.DashboardSessionService/CreateDashboardSession": "resources:write",
  // No scope (null): a secret key ends any session of its tenant, a session's own key that session (signing out, a
  // read-only session too); the service decides. Publishable keys are refused here, as for every unscoped method.
  "/rms.v1.DashboardSessionService/RevokeDashboardSession": null,
  // Secret keys or a dashboard session's key (list), secret keys (revoke): the service checks the kind; a session
  // holds the read scopes, read-only too, so the list names one (the gateway's route names the same).
  "/rms.v1.ApiKeyService/ListApiKeys": "resources:read",
  "/rms.v1.ApiKeyService/RevokeApiKey": "resources:write",
};
