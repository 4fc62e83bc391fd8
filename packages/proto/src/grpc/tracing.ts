import type { DescMethod } from "@bufbuild/protobuf";
import { status as GrpcStatus, type Metadata } from "@grpc/grpc-js";
import { extractContext, failSpan, injectContext, SpanKind, startSpan, type Attributes, type Context, type Span } from "@rms/telemetry";

/**
 * Trace context across gRPC (docs/observability.md, "Tracing"): the client side starts a CLIENT span per call and
 * sends its W3C `traceparent` (and `tracestate`) as metadata; the server side starts a SERVER span, a child of what
 * the metadata names, and runs the handler inside it. Only used while tracing is on (`tracingOn()`).
 */

/** The span attributes of one method (OpenTelemetry's RPC conventions). */
function attributesOf(method: DescMethod) {
  return { "rpc.system": "grpc", "rpc.service": method.parent.typeName, "rpc.method": method.name };
}

/** `rms.v1.ResourceService/GetResource`, the conventional span name of a gRPC call. */
function spanName(method: DescMethod): string {
  return `${method.parent.typeName}/${method.name}`;
}

/** Codes that make a server span an error: the server's fault, not the caller's (OpenTelemetry's gRPC conventions). */
const SERVER_ERRORS = new Set([
  GrpcStatus.UNKNOWN,
  GrpcStatus.DEADLINE_EXCEEDED,
  GrpcStatus.UNIMPLEMENTED,
  GrpcStatus.INTERNAL,
  GrpcStatus.UNAVAILABLE,
  GrpcStatus.DATA_LOSS,
]);

/** A call's client span, its trace headers already written into the call's metadata. */
export function clientSpan(method: DescMethod, metadata: Metadata): Span {
  const { span, context } = startSpan(spanName(method), SpanKind.CLIENT, attributesOf(method));
  injectContext(context, (key, value) => metadata.set(key, value));
  return span;
}

/** Ends a client span with the call's outcome: any code but OK is an error for the caller. */
export function endClientSpan(span: Span, code: GrpcStatus, error?: unknown): void {
  span.setAttribute("rpc.grpc.status_code", code);
  if (code !== GrpcStatus.OK) failSpan(span, error, GrpcStatus[code]);
  span.end();
}

/** A call's server span, a child of the context its metadata carries, and the context to run the handler in. */
export function serverSpan(method: DescMethod, metadata: Metadata, attributes: Attributes = {}): { span: Span; context: Context } {
  const parent = extractContext((key) => {
    const value = metadata.get(key)[0];
    return typeof value === "string" ? value : undefined;
  });
  return startSpan(spanName(method), SpanKind.SERVER, { ...attributesOf(method), ...attributes }, parent);
}

/** Ends a server span with the code the call answered. */
export function endServerSpan(span: Span, code: GrpcStatus, error?: unknown): void {
  span.setAttribute("rpc.grpc.status_code", code);
  if (SERVER_ERRORS.has(code)) failSpan(span, error, GrpcStatus[code]);
  span.end();
}
