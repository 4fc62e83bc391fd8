import { create, fromBinary, toBinary, type DescFile } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import { DESCRIPTOR_SET_BASE64 } from "../descriptor-set.js";
import { Metadata, status as GrpcStatus, type Server, type ServerUnaryCall, type sendUnaryData, type UntypedHandleCall } from "@grpc/grpc-js";
import { RpcError } from "./rpc-error.js";
import { toServiceDefinition, methodPath } from "./service-definition.js";
import { endServerSpan, serverSpan } from "./tracing.js";
import { tracingOn, withContext } from "@rms/telemetry";
import type { AnyService, CallContext, ServiceImplementation } from "./types.js";

export interface ServeOptions {
  /** Runs before every handler; throw an RpcError to refuse the call (e.g. a missing admin token). */
  /** Refuses a call by throwing; may name the caller, which handlers then see as `context.caller`. */
  readonly authorize?: (context: CallContext) => string | undefined;
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
 * Unary methods only: a service with a streaming method is refused here, before
 * anything is registered, since a unary handler installed for it would misread
 * its calls (grpc-js hands a streaming handler a stream, not one request).
 */
export function addService<S extends AnyService>(server: Server, service: S, implementation: ServiceImplementation<S>, options: ServeOptions = {}): void {
  const streaming = service.methods.filter((method) => method.methodKind !== "unary");
  if (streaming.length > 0) {
    throw new Error(`addService serves unary methods only; ${streaming.map((m) => `${methodPath(m)} is ${m.methodKind}`).join(", ")}`);
  }
  const handlers: Record<string, UntypedHandleCall> = {};
  for (const method of service.methods) {
    const handler = (implementation as Record<string, (req: unknown, ctx: CallContext) => Promise<unknown>>)[method.localName];
    if (!handler) throw new Error(`no implementation for ${methodPath(method)}`);
    handlers[method.localName] = (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
      const started = performance.now();
      // The call's own flag, read when asked: grpc-js sets it when the stream closes before the answer (the caller
      // cancelled, or its deadline passed). It used to be an AbortController aborted on grpc-js's "cancelled" event,
      // which grpc-js also emits once a call has ended normally: a DOMException and an event for every call, about a
      // sixth of an echo server's CPU (docs/performance.md, "The gRPC hop").
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
      const traced = tracingOn() ? serverSpan(method, call.metadata) : null;
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
