import { connectivityState, status as GrpcStatus, type Client } from "@grpc/grpc-js";
import {
  CORE_SERVICES,
  Health,
  HealthCheckResponse_ServingStatus,
  REQUEST_ID_METADATA,
  TransportError,
  bearerMetadata,
  createClient,
  mutualTlsCredentials,
  type CallOptions,
  type CoreServiceName,
  type CoreTlsFiles,
  type ServiceClient,
} from "@rms/proto";
import { ApiError } from "./errors.js";

/** Deadline of one call to core (core's own budget ends half a second earlier, so it answers first). */
export const CORE_CALL_TIMEOUT_MS = 10_000;
/** Deadline of the health check behind GET /v1/status. */
export const HEALTH_TIMEOUT_MS = 1_000;

export type ServingStatus = "SERVING" | "NOT_SERVING" | "UNKNOWN";

// Core's services the gateway calls, by the name its code uses: @rms/proto's one table, @rms/client's too.
export type { CoreServiceName };
/** One typed client per service of CORE_SERVICES. */
export type CoreServiceClients = { readonly [K in CoreServiceName]: ServiceClient<(typeof CORE_SERVICES)[K]> };

/** What the gateway needs from core; tests may wrap it. */
export interface CoreClients extends CoreServiceClients {
  /**
   * grpc.health.v1.Health/Check of one name: the whole server (`""`, the default: SERVING while core and its
   * database answer) or DATABASE_HEALTH_SERVICE (SERVING while the database answers quickly); rejects when core is
   * unreachable.
   */
  health(timeoutMs: number, requestId?: string, service?: string): Promise<ServingStatus>;
  /** The state of the connection behind a service's client (what an unknown outcome is judged by). */
  connectivity(service: CoreServiceName): connectivityState;
  close(): void;
}

/** The RPC names of one service, and their request and reply messages. */
export type RpcName<S extends CoreServiceName> = keyof CoreServiceClients[S] & string;
type RpcOf<S extends CoreServiceName, M extends RpcName<S>> = CoreServiceClients[S][M];
export type RpcRequest<S extends CoreServiceName, M extends RpcName<S>> = RpcOf<S, M> extends (request: infer R, options?: CallOptions) => unknown ? R : never;
export type RpcReply<S extends CoreServiceName, M extends RpcName<S>> = RpcOf<S, M> extends (...args: never[]) => Promise<infer R> ? R : never;

/** One call to core, as data: which service and RPC, with which request message. */
export interface CoreCall {
  readonly service: CoreServiceName;
  readonly rpc: string;
  readonly request: unknown;
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
  const names = Object.keys(CORE_SERVICES) as CoreServiceName[];
  const clients = new Map<CoreServiceName, ServiceClient<never> & { close(): void; readonly channel: Client }>(
    names.map((name) => [name, createClient(CORE_SERVICES[name], address, options)]),
  );
  // Health needs no token: it is the standard grpc.health.v1 service.
  const health = createClient(Health, address, credentials);
  return {
    ...(Object.fromEntries(clients) as unknown as CoreServiceClients),
    async health(timeoutMs, requestId, service = "") {
      const reply = await health.check({ service }, { timeoutMs, ...(requestId ? { metadata: { [REQUEST_ID_METADATA]: requestId } } : {}) });
      return SERVING_STATUS[reply.status] ?? "UNKNOWN";
    },
    connectivity: (service) => clients.get(service)!.channel.getChannel().getConnectivityState(false),
    close() {
      for (const client of clients.values()) client.close();
      health.close();
    },
  };
}

/**
 * Makes one call to core. A write whose call failed in transit (deadline passed,
 * connection lost) after it may have reached core has an unknown outcome: it
 * becomes 500 `outcome_unknown` (not recorded for replay; a retry under the same
 * Idempotency-Key completes it exactly once), never 503, which promises that
 * nothing was done. A call that could not reach core at all (no connection when
 * it started, none made since) stays 503. Answers core gave itself are not touched.
 */
export async function callCore(core: CoreClients, call: CoreCall, options: CallOptions, write: boolean): Promise<unknown> {
  const client = core[call.service] as unknown as Record<string, (request: unknown, options: CallOptions) => Promise<unknown>>;
  const connectedAtStart = core.connectivity(call.service) === connectivityState.READY;
  try {
    return await client[call.rpc]!(call.request, options);
  } catch (error) {
    if (write && error instanceof TransportError && maySeeCore(error, connectedAtStart, core.connectivity(call.service))) throw ApiError.outcomeUnknown(error);
    throw error;
  }
}

function maySeeCore(error: TransportError, connectedAtStart: boolean, stateNow: connectivityState): boolean {
  if (error.grpcCode === GrpcStatus.DEADLINE_EXCEEDED || error.grpcCode === GrpcStatus.CANCELLED) return true;
  // A connection that was up, or one that closed (IDLE) rather than failed to open (TRANSIENT_FAILURE).
  return connectedAtStart || stateNow === connectivityState.READY || stateNow === connectivityState.IDLE;
}
