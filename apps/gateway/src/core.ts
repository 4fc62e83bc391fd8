import { AdminService, Health, HealthCheckResponse_ServingStatus, ResourceService, createClient, mutualTlsCredentials, type CoreTlsFiles, type ServiceClient } from "@rms/proto";

/** Deadline of one call to core. */
export const CORE_CALL_TIMEOUT_MS = 10_000;
/** Deadline of the health check behind GET /v1/status. */
export const HEALTH_TIMEOUT_MS = 1_000;

export type ServingStatus = "SERVING" | "NOT_SERVING" | "UNKNOWN";

/** What the gateway needs from core; tests may pass fakes. */
export interface CoreClients {
  readonly resources: ServiceClient<typeof ResourceService>;
  readonly admin: ServiceClient<typeof AdminService>;
  /** grpc.health.v1.Health/Check for the whole server (service ""); rejects when core is unreachable. */
  health(timeoutMs: number, requestId?: string): Promise<ServingStatus>;
  close(): void;
}

const SERVING_STATUS: Partial<Record<HealthCheckResponse_ServingStatus, ServingStatus>> = {
  [HealthCheckResponse_ServingStatus.SERVING]: "SERVING",
  [HealthCheckResponse_ServingStatus.NOT_SERVING]: "NOT_SERVING",
};

/**
 * Clients of core's services, every call authenticated with the gateway's own token (core allows it
 * only the calls the gateway makes); over TLS with the gateway's client certificate when `tls` is given.
 */
export function connectCore(address: string, token: string, tls: CoreTlsFiles | null = null): CoreClients {
  const credentials = tls ? { credentials: mutualTlsCredentials(tls) } : {};
  const options = { metadata: { authorization: `Bearer ${token}` }, timeoutMs: CORE_CALL_TIMEOUT_MS, ...credentials };
  const resources = createClient(ResourceService, address, options);
  const admin = createClient(AdminService, address, options);
  // Health needs no token: it is the standard grpc.health.v1 service.
  const health = createClient(Health, address, credentials);
  return {
    resources,
    admin,
    async health(timeoutMs, requestId) {
      const reply = await health.check({ service: "" }, { timeoutMs, ...(requestId ? { metadata: { "rms-request-id": requestId } } : {}) });
      return SERVING_STATUS[reply.status] ?? "UNKNOWN";
    },
    close() {
      resources.close();
      admin.close();
      health.close();
    },
  };
}
