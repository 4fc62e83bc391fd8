import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { credentials as grpcCredentials, type ChannelCredentials } from "@grpc/grpc-js";
import {
  IDEMPOTENCY_KEY_METADATA,
  REQUEST_ID_METADATA,
  bearerMetadata,
  createClient,
  newRequestId,
  type AnyService,
  type CallOptions,
  type ServiceClient,
} from "@rms/proto";
import { injectActiveContext, tracingOn } from "@rms/telemetry";
import { DEFAULT_RETRY, retryServiceConfig, type RetryPolicy } from "./retry.js";
import { CORE_SERVICES, isKeyedWrite, type CoreServiceName } from "./services.js";

/** Core's mutual TLS from this side: the CA that signed core's certificate, and this service's certificate and key (PEM). */
export type CoreTls =
  | { readonly ca: Buffer | string; readonly cert: Buffer | string; readonly key: Buffer | string }
  /** The same as files (what CORE_TLS_CA_FILE, CORE_TLS_CERT_FILE and CORE_TLS_KEY_FILE name). */
  | { readonly caFile: string; readonly certFile: string; readonly keyFile: string };

export interface CoreClientOptions {
  /** Core's `host:port` (its CORE_ADDR). */
  readonly address: string;
  /** This service's bearer token: core's caller table keeps its SHA-256. Leave it out when the client certificate names the service. */
  readonly token?: string;
  /** Mutual TLS (required when core is not on loopback); plaintext without it. */
  readonly tls?: CoreTls;
  /** The deadline of a call that gives none of its own, in milliseconds (default 10 s), across all its attempts. */
  readonly deadlineMs?: number;
  /** Retries of UNAVAILABLE (default: 4 attempts in all, 0.1 s to 2 s apart); `{ maxAttempts: 1 }` turns them off. */
  readonly retry?: Partial<RetryPolicy>;
  /**
   * The id of the request this service is serving, sent with each call so core's log lines and the events a write
   * records name it (e.g. read from the service's own request context). Unset, or when it answers undefined: a new
   * `req_` id per call.
   */
  readonly requestId?: () => string | undefined;
}

/** A call's options: those of every typed client, plus its request id and, for a write, its idempotency key. */
export interface CoreCallOptions extends CallOptions {
  /** This call's request id (default: the client's `requestId`, else a new one). */
  readonly requestId?: string;
  /**
   * A write's idempotency key (default: a new random one for this call, kept across its retries). Give your own to
   * make a repeat of the same operation, in a later call or after a restart, answer the first outcome. Not sent with
   * AdminService's writes, which core keeps no key for (they are never retried either).
   */
  readonly idempotencyKey?: string;
}

/** Every method of a service's typed client, with the client's call options. */
type WithCoreOptions<C> = {
  [K in keyof C]: C[K] extends (request: infer R, options?: CallOptions) => infer A ? (request: R, options?: CoreCallOptions) => A : C[K];
};

/** One namespace per core service (`core.resources`, `core.jobs`, ...), typed by the generated messages. */
export type CoreClient = { readonly [K in CoreServiceName]: WithCoreOptions<ServiceClient<(typeof CORE_SERVICES)[K]>> } & {
  /** Closes the connections; calls made after it fail. */
  close(): void;
};

export const DEFAULT_DEADLINE_MS = 10_000;

function channelCredentials(tls: CoreTls | undefined): ChannelCredentials {
  if (!tls) return grpcCredentials.createInsecure();
  const pem = (value: Buffer | string) => (typeof value === "string" ? Buffer.from(value) : value);
  if ("caFile" in tls) return grpcCredentials.createSsl(readFileSync(tls.caFile), readFileSync(tls.keyFile), readFileSync(tls.certFile));
  return grpcCredentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert));
}

/**
 * A client of core for an internal service (docs/internal-clients.md): one namespace per service with the
 * generated request and answer types, each call with a deadline, retried on UNAVAILABLE (reads as they are, writes
 * under an idempotency key the client makes once per call; the operator's account and key writes, which core keeps no
 * key for, never), carrying the request id and the trace context. Thin
 * on purpose: retries are grpc-js's own (the channel's service config), errors are @rms/proto's `RpcError` with
 * core's error detail (`code`, `message`, `param`).
 */
export function createCoreClient(options: CoreClientOptions): CoreClient {
  const services = Object.values(CORE_SERVICES) as AnyService[];
  const common = {
    credentials: channelCredentials(options.tls),
    ...(options.token === undefined ? {} : { metadata: bearerMetadata(options.token) }),
    timeoutMs: options.deadlineMs ?? DEFAULT_DEADLINE_MS,
    channelOptions: { "grpc.service_config": retryServiceConfig(services, { ...DEFAULT_RETRY, ...options.retry }) },
  };
  const opened: { close(): void }[] = [];
  const namespaces = Object.fromEntries(
    (Object.keys(CORE_SERVICES) as CoreServiceName[]).map((name) => {
      const service: AnyService = CORE_SERVICES[name];
      const client = createClient(service, options.address, common);
      opened.push(client);
      return [name, wrap(service, client as unknown as Record<string, Call>, options)];
    }),
  );
  return {
    ...(namespaces as unknown as Omit<CoreClient, "close">),
    close() {
      for (const client of opened) client.close();
    },
  };
}

type Call = (request: unknown, options?: CallOptions) => unknown;

/** Each method of a service's typed client, sending the call's own metadata: request id, idempotency key, trace. */
function wrap(service: AnyService, client: Record<string, Call>, options: CoreClientOptions): Record<string, Call> {
  return Object.fromEntries(
    service.methods.map((method) => {
      const call = client[method.localName]!;
      const keyed = isKeyedWrite(method);
      return [
        method.localName,
        (request: unknown, callOptions: CoreCallOptions = {}) => {
          const { requestId, idempotencyKey, ...rest } = callOptions;
          const metadata: Record<string, string> = { [REQUEST_ID_METADATA]: requestId ?? options.requestId?.() ?? newRequestId() };
          if (keyed) metadata[IDEMPOTENCY_KEY_METADATA] = idempotencyKey ?? randomUUID();
          // With our tracing on, the typed client starts a span and sends its context; otherwise the service's own.
          if (!tracingOn()) injectActiveContext((key, value) => (metadata[key] = value));
          return call(request, { ...rest, metadata: { ...metadata, ...rest.metadata } });
        },
      ];
    }),
  );
}
