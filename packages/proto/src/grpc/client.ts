import { readFileSync } from "node:fs";
import { create, fromBinary, toBinary, type DescMessage } from "@bufbuild/protobuf";
import {
  Client,
  credentials as grpcCredentials,
  Metadata,
  status as GrpcStatus,
  type ChannelCredentials,
  type ChannelOptions,
  type StatusObject,
} from "@grpc/grpc-js";
import { tracingOn } from "@rms/telemetry";
import { RpcError, TransportError, isServiceError } from "./rpc-error.js";
import { binary, methodPath } from "./service-definition.js";
import { clientSpan, endClientSpan } from "./tracing.js";
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

/**
 * What grpc-js does on every call by default that the internal hop does not use (measured with
 * `node bench/src/grpc-hop.mjs`; docs/performance.md, "The gRPC hop"): channelz, the channel's per-call and
 * per-subchannel call counters and timestamps that only a channelz admin service reads (we run none). Retries stay
 * on: grpc-js retries only transparently here (a call the server never saw, during a reconnect), which a restart of
 * core relies on.
 */
export const HOP_CHANNEL_OPTIONS: ChannelOptions = { "grpc.enable_channelz": 0 };
/** The server side of HOP_CHANNEL_OPTIONS, for `new Server(...)`. */
export const HOP_SERVER_OPTIONS = { "grpc.enable_channelz": 0 } as const;

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
  const channel = new Client(address, options.credentials ?? grpcCredentials.createInsecure(), {
    ...DEFAULT_CHANNEL_OPTIONS,
    ...HOP_CHANNEL_OPTIONS,
    ...options.channelOptions,
  });
  const client: Record<string, unknown> = {
    close: () => channel.close(),
    channel,
  };
  // The metadata of every call, validated once; each call clones it (no validation) and adds its own.
  const base = new Metadata();
  for (const [key, value] of Object.entries(options.metadata ?? {})) base.set(key, value);
  for (const method of service.methods) {
    if (method.methodKind === "client_streaming") client[method.localName] = clientStreamingCall(channel, method, base, options);
    if (method.methodKind === "server_streaming") client[method.localName] = serverStreamingCall(channel, method, base, options);
    if (method.methodKind !== "unary") continue;
    const path = methodPath(method);
    const serialize = (value: never) => binary(toBinary(method.input, value));
    const deserialize = (bytes: Buffer) => fromBinary(method.output, bytes);
    client[method.localName] = (request: unknown, callOptions: CallOptions = {}) =>
      new Promise((resolve, reject) => {
        const metadata = base.clone();
        const own = callOptions.metadata;
        if (own !== undefined) for (const key in own) metadata.set(key, own[key] as string);
        const timeoutMs = callOptions.timeoutMs ?? options.timeoutMs;
        // With tracing on, a CLIENT span whose context goes to the server in the metadata (tracing.ts).
        const span = tracingOn() ? clientSpan(method, metadata) : null;
        const call = channel.makeUnaryRequest(
          path,
          serialize,
          deserialize,
          fromInit(method.input, request),
          metadata,
          timeoutMs === undefined ? {} : { deadline: Date.now() + timeoutMs },
          (error, response) => {
            if (span) endClientSpan(span, error ? error.code : GrpcStatus.OK, error);
            if (error) reject(toRpcError(error));
            else resolve(response);
          },
        );
        callOptions.signal?.addEventListener("abort", () => call.cancel(), { once: true });
        // grpc-js emits the status right after the callback, in the same tick: before anyone awaiting sees the outcome.
        const onTrailers = callOptions.onTrailers;
        if (onTrailers) call.on("status", (status: StatusObject) => onTrailers(status.metadata));
      });
  }
  return client as ServiceClient<S> & { close(): void; readonly channel: Client };
}

type Method = AnyService["methods"][number];

function callMetadata(base: Metadata, callOptions: CallOptions): Metadata {
  const metadata = base.clone();
  const own = callOptions.metadata;
  if (own !== undefined) for (const key in own) metadata.set(key, own[key] as string);
  return metadata;
}

function deadlineOf(callOptions: CallOptions, options: ClientOptions) {
  const timeoutMs = callOptions.timeoutMs ?? options.timeoutMs;
  return timeoutMs === undefined ? {} : { deadline: Date.now() + timeoutMs };
}

/**
 * Bytes of a client stream's messages handed to grpc-js but not yet sent on the connection (the HTTP/2 stream's
 * flow-control window lets them go as the server reads): two of an upload's 256 KiB messages, so one is ready when
 * the other leaves. grpc-js's own writable would queue 16 messages of any size (up to 64 MiB of 4 MiB messages)
 * before it pushes back; with this the iterable is pulled, and its source read, only as fast as the server takes it.
 */
export const CLIENT_STREAM_UNSENT_BYTES = 512 * 1024;

/**
 * A client-streaming call: the requests are serialized and written as the iterable yields them, while fewer than
 * CLIENT_STREAM_UNSENT_BYTES of them wait to be sent (a write's callback says it left); when the iterable throws (its
 * source failed: a client of ours went away), the call is cancelled and the promise rejects with that error. The
 * answer (or the server's error) settles the promise.
 */
function clientStreamingCall(channel: Client, method: Method, base: Metadata, options: ClientOptions) {
  const path = methodPath(method);
  // The pump serializes each message itself, to count its bytes.
  const serialize = (bytes: Buffer) => bytes;
  const deserialize = (bytes: Buffer) => fromBinary(method.output, bytes);
  return (requests: AsyncIterable<unknown>, callOptions: CallOptions = {}) =>
    new Promise((resolve, reject) => {
      let failed: unknown;
      const call = channel.makeClientStreamRequest(
        path,
        serialize,
        deserialize,
        callMetadata(base, callOptions),
        deadlineOf(callOptions, options),
        (error, response) => {
          if (failed !== undefined) reject(failed);
          else if (error) reject(toRpcError(error));
          else resolve(response);
        },
      );
      callOptions.signal?.addEventListener("abort", () => call.cancel(), { once: true });
      const onTrailers = callOptions.onTrailers;
      if (onTrailers) call.on("status", (status: StatusObject) => onTrailers(status.metadata));
      const onHeaders = callOptions.onHeaders;
      if (onHeaders) call.on("metadata", () => onHeaders());
      let cancelled = false;
      let unsent = 0;
      let sent: (() => void) | null = null;
      const wake = () => {
        const waiting = sent;
        sent = null;
        waiting?.();
      };
      // An error, or an answer before the last message (the server refused it): nothing more is written.
      const stop = () => {
        cancelled = true;
        wake();
      };
      call.on("error", stop);
      call.on("status", stop);
      const pump = async () => {
        for await (const request of requests) {
          if (cancelled) return;
          const bytes = binary(toBinary(method.input, fromInit(method.input, request)));
          unsent += bytes.length;
          call.write(bytes, () => {
            unsent -= bytes.length;
            wake();
          });
          while (unsent >= CLIENT_STREAM_UNSENT_BYTES && !cancelled) await new Promise<void>((resolve) => (sent = resolve));
        }
        if (!cancelled) call.end();
      };
      pump().catch((error: unknown) => {
        failed = error;
        call.cancel();
      });
    });
}

/**
 * A server-streaming call as an async iterable of messages: read as the loop asks (grpc-js stops reading from the
 * network when its buffer is full); the server's error is thrown as an RpcError; leaving the loop early cancels.
 */
function serverStreamingCall(channel: Client, method: Method, base: Metadata, options: ClientOptions) {
  const path = methodPath(method);
  const serialize = (value: never) => binary(toBinary(method.input, value));
  const deserialize = (bytes: Buffer) => fromBinary(method.output, bytes);
  return (request: unknown, callOptions: CallOptions = {}): AsyncIterable<unknown> => ({
    async *[Symbol.asyncIterator]() {
      const call = channel.makeServerStreamRequest(
        path,
        serialize,
        deserialize,
        fromInit(method.input, request),
        callMetadata(base, callOptions),
        deadlineOf(callOptions, options),
      );
      callOptions.signal?.addEventListener("abort", () => call.cancel(), { once: true });
      let done = false;
      try {
        for await (const message of call) yield message;
        done = true;
      } catch (error) {
        done = true;
        throw toRpcError(error);
      } finally {
        if (!done) call.cancel();
      }
    },
  });
}

function fromInit(schema: DescMessage, init: unknown): never {
  return create(schema, init as never) as never;
}

/** PEM files for gRPC over TLS with client certificates: this process's certificate and key, and the CA to trust. */
export interface CoreTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
}

const CORE_TLS_VARIABLES = ["CORE_TLS_CERT_FILE", "CORE_TLS_KEY_FILE", "CORE_TLS_CA_FILE"] as const;

/**
 * CORE_TLS_CERT_FILE, CORE_TLS_KEY_FILE and CORE_TLS_CA_FILE: all three, or none (null).
 * Some but not all throws an Error whose message is one line naming the missing variable.
 */
export function coreTlsFilesFromEnv(env: Readonly<Record<string, string | undefined>>): CoreTlsFiles | null {
  const [certFile, keyFile, caFile] = CORE_TLS_VARIABLES.map((name) => env[name] || undefined);
  if (certFile && keyFile && caFile) return { certFile, keyFile, caFile };
  const missing = CORE_TLS_VARIABLES.find((name) => !env[name]);
  if (CORE_TLS_VARIABLES.some((name) => env[name])) throw new Error(`${missing} must be set together with the other CORE_TLS_ files`);
  return null;
}

/** Channel credentials that verify core's certificate against `caFile` and present this process's own. */
export function mutualTlsCredentials(files: CoreTlsFiles): ChannelCredentials {
  return grpcCredentials.createSsl(readFileSync(files.caFile), readFileSync(files.keyFile), readFileSync(files.certFile));
}
