import { AdminService } from "../gen/rms/v1/admin_pb.js";
import { ApiKeyService } from "../gen/rms/v1/api_keys_pb.js";
import { DashboardSessionService } from "../gen/rms/v1/dashboard_sessions_pb.js";
import { EventService } from "../gen/rms/v1/events_pb.js";
import { FileService } from "../gen/rms/v1/files_pb.js";
import { JobService } from "../gen/rms/v1/jobs_pb.js";
import { ResourceService } from "../gen/rms/v1/resources_pb.js";
import { WebhookEndpointService } from "../gen/rms/v1/webhook_endpoints_pb.js";
import type { AnyService } from "./types.js";

/**
 * Core's services by the name a caller's code reaches them through (`core.resources.getResource(...)`): the
 * gateway's clients and @rms/client's are made from this one table, so a new kind's service is one line here.
 */
export const CORE_SERVICES = {
  resources: ResourceService,
  jobs: JobService,
  events: EventService,
  webhookEndpoints: WebhookEndpointService,
  files: FileService,
  admin: AdminService,
  dashboardSessions: DashboardSessionService,
  apiKeys: ApiKeyService,
} as const satisfies Record<string, AnyService>;

export type CoreServiceName = keyof typeof CORE_SERVICES;
