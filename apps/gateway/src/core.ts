import { connectivityState, status as GrpcStatus, type Client } from "@grpc/grpc-js";
import { AdminService, Health, HealthCheckResponse_ServingStatus, ResourceService, REQUEST_ID_METADATA, TransportError, bearerMetadata, createClient, mutualTlsCredentials, type CoreTlsFiles, type ServiceClient } from "@rms/proto";
import { ApiError } from "./errors.js";

/** Deadline of one call to core (core's own budget ends half a second earlier, so it answers first). */
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
  const options = { metadata: bearerMetadata(token), timeoutMs: CORE_CALL_TIMEOUT_MS, ...credentials };
  const resources = unknownOutcomeOfWrites(createClient(ResourceService, address, options));
  const admin = createClient(AdminService, address, options);
  // Health needs no token: it is the standard grpc.health.v1 service.
  const health = createClient(Health, address, credentials);
  return {
    resources,
    admin,
    async health(timeoutMs, requestId) {
      const reply = await health.check({ service: "" }, { timeoutMs, ...(requestId ? { metadata: { [REQUEST_ID_METADATA]: requestId } } : {}) });
      return SERVING_STATUS[reply.status] ?? "UNKNOWN";
    },
    close() {
      resources.close();
      admin.close();
      health.close();
    },
  };
}

/** The resource RPCs that change data. */
const WRITES = ["createResource", "updateResource", "deleteResource"] as const;

/**
 * A write whose call failed in transit (deadline passed, connection lost) after it
 * may have reached core has an unknown outcome: it becomes 500 `outcome_unknown`
 * (not recorded for replay; a retry under the same Idempotency-Key completes it
 * exactly once), never 503, which promises that nothing was done. A call that
 * could not reach core at all (no connection when it started, none made since)
 * stays 503. Answers core gave itself are not touched.
 */
function unknownOutcomeOfWrites<C extends ServiceClient<typeof ResourceService> & { readonly channel: Client }>(client: C): C {
  const channel = client.channel.getChannel();
  for (const name of WRITES) {
    const call = client[name].bind(client) as (...args: unknown[]) => Promise<unknown>;
    (client as Record<string, unknown>)[name] = async (...args: unknown[]) => {
      const connectedAtStart = channel.getConnectivityState(false) === connectivityState.READY;
      try {
        return await call(...args);
      } catch (error) {
        if (error instanceof TransportError && maySeeCore(error, connectedAtStart, channel.getConnectivityState(false))) throw ApiError.outcomeUnknown();
        throw error;
      }
    };
  }
  return client;
}

function maySeeCore(error: TransportError, connectedAtStart: boolean, stateNow: connectivityState): boolean {
  if (error.grpcCode === GrpcStatus.DEADLINE_EXCEEDED || error.grpcCode === GrpcStatus.CANCELLED) return true;
  // A connection that was up, or one that closed (IDLE) rather than failed to open (TRANSIENT_FAILURE).
  return connectedAtStart || stateNow === connectivityState.READY || stateNow === connectivityState.IDLE;
}
