import { create, fromBinary, toBinary, type DescMessage } from "@bufbuild/protobuf";
import { Client, credentials as grpcCredentials, Metadata, status as GrpcStatus, type ChannelCredentials, type ChannelOptions } from "@grpc/grpc-js";
import { RpcError, TransportError, isServiceError } from "./rpc-error.js";
import { methodPath } from "./service-definition.js";
import type { AnyService, CallOptions, ServiceClient } from "./types.js";

export interface ClientOptions {
  /** Defaults to an insecure channel: core listens on a private address. */
  readonly credentials?: ChannelCredentials;
  /** Metadata sent on every call, e.g. `authorization: Bearer <admin token>`. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** Default deadline per call in milliseconds. */
  readonly timeoutMs?: number;
  readonly channelOptions?: ChannelOptions;
}

/**
 * Internal peers restart in about a second: reconnect quickly instead of grpc-js's default
 * backoff (up to 120 s), so service returns by itself soon after a restarted peer is back.
 */
const DEFAULT_CHANNEL_OPTIONS: ChannelOptions = {
  "grpc.initial_reconnect_backoff_ms": 100,
  "grpc.min_reconnect_backoff_ms": 100,
  "grpc.max_reconnect_backoff_ms": 1_000,
};

/** Codes a caller may retry or report as "temporarily unavailable". */
const UNAVAILABLE_CODES = new Set([GrpcStatus.UNAVAILABLE, GrpcStatus.DEADLINE_EXCEEDED, GrpcStatus.CANCELLED]);

function toRpcError(error: unknown): RpcError {
  if (!isServiceError(error)) {
    return new RpcError(GrpcStatus.INTERNAL, { type: "api_error", code: "internal_error", message: String(error) });
  }
  return (
    RpcError.fromMetadata(error.code, error.metadata) ??
    new TransportError(error.code, {
      type: "api_error",
      code: UNAVAILABLE_CODES.has(error.code) ? "service_unavailable" : "internal_error",
      message: error.details || "gRPC call failed",
    })
  );
}

/**
 * A typed promise client for a protobuf-es service over grpc-js: one method per
 * RPC, rejecting with RpcError (the server's ErrorDetail when it sent one).
 */
export function createClient<S extends AnyService>(
  service: S,
  address: string,
  options: ClientOptions = {},
): ServiceClient<S> & { close(): void; readonly channel: Client } {
  const channel = new Client(address, options.credentials ?? grpcCredentials.createInsecure(), { ...DEFAULT_CHANNEL_OPTIONS, ...options.channelOptions });
  const client: Record<string, unknown> = {
    close: () => channel.close(),
    channel,
  };
  for (const method of service.methods) {
    if (method.methodKind !== "unary") continue;
    const path = methodPath(method);
    const serialize = (value: never) => Buffer.from(toBinary(method.input, value));
    const deserialize = (bytes: Buffer) => fromBinary(method.output, bytes);
    client[method.localName] = (request: unknown, callOptions: CallOptions = {}) =>
      new Promise((resolve, reject) => {
        const metadata = new Metadata();
        for (const [key, value] of Object.entries({ ...options.metadata, ...callOptions.metadata })) metadata.set(key, value);
        const timeoutMs = callOptions.timeoutMs ?? options.timeoutMs;
        const call = channel.makeUnaryRequest(
          path,
          serialize,
          deserialize,
          fromInit(method.input, request),
          metadata,
          timeoutMs === undefined ? {} : { deadline: Date.now() + timeoutMs },
          (error, response) => (error ? reject(toRpcError(error)) : resolve(response)),
        );
        callOptions.signal?.addEventListener("abort", () => call.cancel(), { once: true });
      });
  }
  return client as ServiceClient<S> & { close(): void; readonly channel: Client };
}

function fromInit(schema: DescMessage, init: unknown): never {
  return create(schema, init as never) as never;
}
