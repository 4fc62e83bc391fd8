import { AdminService, DashboardSessionService, EventService, FileService, JobService, ResourceService, WebhookEndpointService, type AnyService } from "@rms/proto";

/** Core's services, by the namespace a client calls them through (`core.resources.getResource(...)`). */
export const CORE_SERVICES = {
  resources: ResourceService,
  jobs: JobService,
  events: EventService,
  webhookEndpoints: WebhookEndpointService,
  files: FileService,
  admin: AdminService,
  dashboardSessions: DashboardSessionService,
} as const satisfies Record<string, AnyService>;

export type CoreServiceName = keyof typeof CORE_SERVICES;

type Method = AnyService["methods"][number];

/**
 * A call that changes nothing: safe to repeat as it is. Core's methods say so by their verb; every other unary call
 * is a write, which the client sends under an idempotency key so that a repeat is answered, not run again.
 */
export function isRead(method: Method): boolean {
  return /^(Get|List|Search|Read|Verify)[A-Z]/.test(method.name);
}
