import { create, fromBinary, toBinary, type DescFile } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import { DESCRIPTOR_SET_BASE64 } from "../descriptor-set.js";
import {
  Metadata,
  status as GrpcStatus,
  type Server,
  type ServerReadableStream,
  type ServerUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
  type UntypedHandleCall,
} from "@grpc/grpc-js";
import { once } from "node:events";
import { RpcError } from "./rpc-error.js";
import { toServiceDefinition, methodPath } from "./service-definition.js";
import { endServerSpan, serverSpan } from "./tracing.js";
import { tracingOn, withContext, type Attributes } from "@rms/telemetry";
import type { AnyService, CallContext, Caller, ServiceImplementation } from "./types.js";

export interface ServeOptions {
  /** Runs before every handler: refuses a call by throwing an RpcError, or names the caller, which handlers see as `context.caller`. */
  readonly authorize?: (context: CallContext) => Caller | undefined;
  /** Attributes of a traced call's server span besides the method's (e.g. who calls, before `authorize` decides). */
  readonly spanAttributes?: (context: CallContext) => Attributes;
  /** Turns a thrown non-RpcError into one (e.g. database outages into UNAVAILABLE); undefined: INTERNAL. */
  readonly mapError?: (error: unknown) => RpcError | undefined;
  /** Told about every call's outcome, for logs and metrics. `error` is set on failure. */
  readonly onCallEnd?: (context: CallContext, grpcCode: GrpcStatus, durationMs: number, error?: unknown) => void;
}

const internalError = () =>
  new RpcError(GrpcStatus.INTERNAL, {
    type: "api_error",
    code: "internal_error",
    message: "An internal error occurred. The request may be retried.",
  });

/**
 * Registers a protobuf-es service with a grpc-js server. Handlers are async
 * functions; an RpcError they throw becomes the status plus its ErrorDetail,
 * anything else becomes a generic INTERNAL error that leaks nothing.
 * Unary, client-streaming and server-streaming methods (types.ts, ServiceImplementation); a service with a
 * bidirectional method is refused here, before anything is registered.
 */
export function addService<S extends AnyService>(server: Server, service: S, implementation: ServiceImplementation<S>, options: ServeOptions = {}): void {
  const bidi = service.methods.filter((method) => method.methodKind === "bidi_streaming");
  if (bidi.length > 0) {
    throw new Error(`addService serves unary and one-way streaming methods only; ${bidi.map((m) => `${methodPath(m)} is ${m.methodKind}`).join(", ")}`);
  }
  const handlers: Record<string, UntypedHandleCall> = {};
  for (const method of service.methods) {
    const handler = (implementation as Record<string, (req: unknown, ctx: CallContext) => Promise<unknown>>)[method.localName];
    if (!handler) throw new Error(`no implementation for ${methodPath(method)}`);
    if (method.methodKind === "client_streaming") {
      handlers[method.localName] = clientStreamingHandler(method, handler as never, implementation, options);
      continue;
    }
    if (method.methodKind === "server_streaming") {
      handlers[method.localName] = serverStreamingHandler(method, handler as never, implementation, options);
      continue;
    }
    handlers[method.localName] = (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
      const started = performance.now();
      // The call's own flag, read when asked: grpc-js sets it when the stream closes before the answer (the caller
      // cancelled, or its deadline passed). Not an AbortController aborted on grpc-js's "cancelled" event, which
      // grpc-js also emits once a call has ended normally: that costs a DOMException and an event for every call, about
      // a sixth of an echo server's CPU (docs/performance.md, "The gRPC hop").
      const signal = {
        get aborted() {
          return call.cancelled;
        },
      };
      const deadline = call.getDeadline();
      // Made only when a handler sets one: most calls send no trailer of their own.
      let trailers: Metadata | undefined;
      const context: CallContext = {
        method: methodPath(method),
        metadata: call.metadata,
        signal,
        deadline: deadline instanceof Date ? deadline.getTime() : deadline,
        caller: null,
        setTrailer(key, value) {
          trailers ??= new Metadata();
          trailers.set(key, value);
        },
      };
      const run = async () => {
        const caller = options.authorize?.(context) ?? null;
        return create(method.output, (await handler.call(implementation, call.request, { ...context, caller })) as never);
      };
      // With tracing on, the handler runs in a SERVER span, a child of the caller's (tracing.ts); its `onCallEnd` too,
      // so the call's log line carries the trace id.
      const traced = tracingOn() ? serverSpan(method, call.metadata, options.spanAttributes?.(context)) : null;
      const answer = () =>
        run().then(
          (response) => {
            options.onCallEnd?.(context, GrpcStatus.OK, performance.now() - started);
            if (traced) endServerSpan(traced.span, GrpcStatus.OK);
            if (trailers) callback(null, response, trailers);
            else callback(null, response);
          },
          (error: unknown) => {
            const rpcError = error instanceof RpcError ? error : (options.mapError?.(error) ?? internalError());
            options.onCallEnd?.(context, rpcError.grpcCode, performance.now() - started, error);
            if (traced) endServerSpan(traced.span, rpcError.grpcCode, error);
            // grpc-js percent-encodes the details with encodeURI, which throws on a lone surrogate (half of an
            // emoji cut by a message that quotes the caller's input), and that throw would end the process.
            const metadata = rpcError.toMetadata();
            if (trailers) metadata.merge(trailers);
            callback({ code: rpcError.grpcCode, details: rpcError.message.toWellFormed(), metadata });
          },
        );
      if (traced) withContext(traced.context, answer);
      else answer();
    };
  }
  server.addService(toServiceDefinition(service), handlers);
}

type Method = AnyService["methods"][number];

/** What a streaming call's handler sees of its call, as a unary one does. */
function streamContext(method: Method, call: ServerReadableStream<unknown, unknown> | ServerWritableStream<unknown, unknown>): CallContext {
  const deadline = call.getDeadline();
  return {
    method: methodPath(method),
    metadata: call.metadata,
    signal: {
      get aborted() {
        return call.cancelled;
      },
    },
    deadline: deadline instanceof Date ? deadline.getTime() : deadline,
    caller: null,
  };
}

function toStatus(error: unknown, options: ServeOptions) {
  const rpcError = error instanceof RpcError ? error : (options.mapError?.(error) ?? internalError());
  return { rpcError, status: { code: rpcError.grpcCode, details: rpcError.message.toWellFormed(), metadata: rpcError.toMetadata() } };
}

/**
 * Messages of a client stream read ahead of its handler (besides the one it holds): one, so that the next is there
 * when the handler asks. grpc-js's readable keeps Node's default of 16 objects, which is 16 messages of up to 4 MiB
 * (the receive limit) read from the network before a slow handler pushes back; with one, an upload's bytes wait
 * in the sender rather than here.
 */
export const CLIENT_STREAM_READ_AHEAD = 1;

/** Sets how far a call's readable reads ahead: Node has no setter for a readable's high-water mark after it is made. */
function limitReadAhead(call: ServerReadableStream<unknown, unknown>): void {
  const state = (call as unknown as { _readableState?: { highWaterMark?: unknown } })._readableState;
  if (state && typeof state.highWaterMark === "number") state.highWaterMark = CLIENT_STREAM_READ_AHEAD;
}

/**
 * A client-streaming method: the handler reads the call's messages as an async iterable (grpc-js reads the next one
 * from the network when the loop asks, at most CLIENT_STREAM_READ_AHEAD ahead, so a slow handler slows the sender) and answers once. A caller that cancels
 * ends the iterable with an error, so the handler's loop throws rather than waiting forever. A cancelled call may
 * also look like a complete one (grpc-js half-closes the stream before it resets it): a method whose messages must
 * all arrive ends its stream with a message of its own (files.proto, `UploadEnd`).
 */
function clientStreamingHandler(
  method: Method,
  handler: (requests: AsyncIterable<unknown>, context: CallContext) => Promise<unknown>,
  self: unknown,
  options: ServeOptions,
): UntypedHandleCall {
  return (call: ServerReadableStream<unknown, unknown>, callback: sendUnaryData<unknown>) => {
    const started = performance.now();
    limitReadAhead(call);
    // Trailers a handler sets (an upload's replay under its Idempotency-Key: `rms-replay`), sent with its answer or error.
    let trailers: Metadata | undefined;
    let headersSent = false;
    const context: CallContext = {
      ...streamContext(method, call),
      setTrailer(key, value) {
        trailers ??= new Metadata();
        trailers.set(key, value);
      },
      sendHeaders() {
        if (headersSent || call.cancelled) return;
        headersSent = true;
        call.sendMetadata(new Metadata());
      },
    };
    // The iterable ends with an error when the caller goes away (grpc-js emits "cancelled" and may not end the stream).
    call.on("cancelled", () =>
      call.destroy(new RpcError(GrpcStatus.CANCELLED, { type: "api_error", code: "service_unavailable", message: "The caller cancelled the call." })),
    );
    const run = async () => {
      const caller = options.authorize?.(context) ?? null;
      return create(method.output, (await handler.call(self, call, { ...context, caller })) as never);
    };
    run().then(
      (response) => {
        options.onCallEnd?.(context, GrpcStatus.OK, performance.now() - started);
        if (trailers) callback(null, response, trailers);
        else callback(null, response);
      },
      (error: unknown) => {
        const { rpcError, status } = toStatus(error, options);
        options.onCallEnd?.(context, rpcError.grpcCode, performance.now() - started, error);
        if (trailers) status.metadata.merge(trailers);
        callback(status);
      },
    );
  };
}

/**
 * A server-streaming method: the handler's async iterable is sent message by message, each written when the
 * previous one left the send buffer (`drain`), so a slow reader slows the handler; a caller that cancels stops it.
 */
function serverStreamingHandler(
  method: Method,
  handler: (request: unknown, context: CallContext) => AsyncIterable<unknown>,
  self: unknown,
  options: ServeOptions,
): UntypedHandleCall {
  return (call: ServerWritableStream<unknown, unknown>) => {
    const started = performance.now();
    const context = streamContext(method, call);
    let gone = false;
    call.on("cancelled", () => {
      gone = true;
      call.emit("drain");
    });
    const run = async () => {
      const caller = options.authorize?.(context) ?? null;
      const messages = handler.call(self, call.request, { ...context, caller });
      for await (const message of messages) {
        if (gone) break;
        if (!call.write(create(method.output, message as never))) await once(call, "drain");
        if (gone) break;
      }
    };
    run().then(
      () => {
        options.onCallEnd?.(context, GrpcStatus.OK, performance.now() - started);
        if (!gone) call.end();
      },
      (error: unknown) => {
        const { rpcError, status } = toStatus(error, options);
        options.onCallEnd?.(context, rpcError.grpcCode, performance.now() - started, error);
        if (!gone) call.emit("error", status);
      },
    );
  };
}

export type ReflectionPackageDefinition = Record<string, { format: "Protocol Buffer 3 EnumDescriptorProto"; type: object; fileDescriptorProtos: Buffer[] }>;

/** proto/'s files as buf built them, with their comments (source info), by file name. */
let commented: Map<string, FileDescriptorProto> | undefined;
function commentedFile(name: string): FileDescriptorProto | undefined {
  commented ??= new Map(fromBinary(FileDescriptorSetSchema, Buffer.from(DESCRIPTOR_SET_BASE64, "base64")).file.map((f) => [f.name, f]));
  return commented.get(name);
}

/**
 * The descriptor set that @grpc/reflection expects, built from protobuf-es file
 * descriptors (with their imports), so reflection needs no .proto files at runtime.
 * protoc-gen-es strips comments from its descriptors, so each file comes from the
 * descriptor set built with source info when it is there (grpcurl describe then shows the comments).
 */
export function reflectionPackageDefinition(files: readonly DescFile[]): ReflectionPackageDefinition {
  const seen = new Map<string, Buffer>();
  const visit = (file: DescFile) => {
    if (seen.has(file.name)) return;
    for (const dependency of file.dependencies) visit(dependency);
    const proto = commentedFile(file.proto.name) ?? create(FileDescriptorProtoSchema, file.proto);
    seen.set(file.proto.name, Buffer.from(toBinary(FileDescriptorProtoSchema, proto)));
  };
  files.forEach(visit);
  // Shaped like a proto-loader enum entry: reflection reads only `fileDescriptorProtos`.
  return { "rms.descriptors": { format: "Protocol Buffer 3 EnumDescriptorProto", type: {}, fileDescriptorProtos: [...seen.values()] } };
}
