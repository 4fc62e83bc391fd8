// Tracing every process shares: one set-up from the standard OTEL_* variables (off unless an exporter is asked for),
// and the small helpers that carry W3C trace context through gRPC metadata, HTTP headers and stored documents.
export { PRODUCTION_SAMPLE_RATIO, tracingConfig, type OtlpProtocol, type SamplerName, type TracingConfig } from "./config.js";
export { startTracing, tracedProcess, type Tracing } from "./setup.js";
export { tracingOn } from "./state.js";
export {
  bindEmitter,
  contextOfStored,
  extractContext,
  failSpan,
  injectActiveContext,
  injectContext,
  inSpan,
  SpanKind,
  startEdgeSpan,
  startSpan,
  SpanStatusCode,
  storedTrace,
  traceField,
  traceLogFields,
  traceLogOptions,
  tracer,
  untraced,
  withContext,
  TRACER_NAME,
  type Attributes,
  type CarrierGetter,
  type Context,
  type Span,
  type StoredTrace,
} from "./context.js";
