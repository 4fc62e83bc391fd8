import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes, type Context, type Span } from "@opentelemetry/api";
import { parseTraceParent, suppressTracing } from "@opentelemetry/core";
import type { TracingConfig } from "./config.js";

/** The name of every span this service starts (the instrumentation scope). */
export const TRACER_NAME = "rms";

export function tracer() {
  return trace.getTracer(TRACER_NAME);
}

export { SpanKind, SpanStatusCode, type Attributes, type Context, type Span };

/**
 * The trace context stored on a queued document (an event, a job), so that the worker that takes it later
 * continues the trace of the request that made it: W3C `traceparent` (and `tracestate` when there is one).
 */
export interface StoredTrace {
  traceparent: string;
  tracestate?: string;
}

/** Reads one header or metadata value by its lower-case name. */
export type CarrierGetter = (key: string) => string | undefined;

/** The context a carrier (HTTP headers, gRPC metadata) names as parent, or the active one when it names none. */
export function extractContext(get: CarrierGetter, base: Context = context.active()): Context {
  return propagation.extract(base, null, {
    get: (_carrier, key) => get(key),
    keys: () => ["traceparent", "tracestate"],
  });
}

/** Writes the context's trace headers (`traceparent`, `tracestate`) through `set`. */
export function injectContext(ctx: Context, set: (key: string, value: string) => void): void {
  propagation.inject(ctx, null, { set: (_carrier, key, value) => set(key, value) });
}

/**
 * Writes the active context's trace headers through `set`, by whatever propagator the process registered: a service
 * traced by its own OpenTelemetry set-up passes its trace on without ours (none registered: nothing is written).
 */
export function injectActiveContext(set: (key: string, value: string) => void): void {
  injectContext(context.active(), set);
}

function hex2(n: number): string {
  return (n & 0xff).toString(16).padStart(2, "0");
}

/** The active span's context as a document field, or undefined when no span is active (tracing off). */
export function storedTrace(ctx: Context = context.active()): StoredTrace | undefined {
  const span = trace.getSpan(ctx);
  if (!span) return undefined;
  const sc = span.spanContext();
  if (!trace.isSpanContextValid(sc)) return undefined;
  const state = sc.traceState?.serialize();
  return { traceparent: `00-${sc.traceId}-${sc.spanId}-${hex2(sc.traceFlags)}`, ...(state ? { tracestate: state } : {}) };
}

/** `{ trace: storedTrace() }` when a span is active, else nothing: spread into a document being written. */
export function traceField(): { trace: StoredTrace } | Record<string, never> {
  const stored = storedTrace();
  return stored ? { trace: stored } : {};
}

/** The context a stored trace continues (a remote parent), or the root context when there is none or it is malformed. */
export function contextOfStored(stored: StoredTrace | null | undefined): Context {
  if (!stored || typeof stored.traceparent !== "string") return ROOT_CONTEXT;
  const parsed = parseTraceParent(stored.traceparent);
  if (!parsed) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, { ...parsed, isRemote: true, traceFlags: parsed.traceFlags & TraceFlags.SAMPLED });
}

/** A new span, a child of `parent` (default: the active context), and the context in which it is the active span. */
export function startSpan(name: string, kind: SpanKind, attributes: Attributes, parent: Context = context.active()): { span: Span; context: Context } {
  const span = tracer().startSpan(name, { kind, attributes }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

/**
 * A span at the public edge: the start of a new trace, whatever the client sent. A client's
 * `traceparent` (read by `extractContext` into `client`) is kept as a link, never as the parent: its sampled flag
 * cannot force sampling under a ratio sampler (the sampler decides for a root), and its trace id is not stored on
 * the events and jobs the request writes.
 */
export function startEdgeSpan(name: string, kind: SpanKind, attributes: Attributes, client: Context): { span: Span; context: Context } {
  const linked = trace.getSpanContext(client);
  const links =
    linked && trace.isSpanContextValid(linked) ? [{ context: { ...linked, isRemote: true }, attributes: { "rms.link": "client traceparent" } }] : [];
  const span = tracer().startSpan(name, { kind, attributes, links, root: true }, ROOT_CONTEXT);
  return { span, context: trace.setSpan(ROOT_CONTEXT, span) };
}

/** Runs `fn` with `ctx` as the active context (and everything it starts asynchronously). */
export function withContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}

/** Runs `fn` with tracing suppressed: the spans it starts do not record, and no trace context is sent on. */
export function untraced<T>(fn: () => T): T {
  return context.with(suppressTracing(context.active()), fn);
}

/**
 * Makes every listener later added to `emitter` run in `ctx`: what a request's stream events (its body arriving, its
 * response finishing) need, since they come from the socket, outside the context the request's handling started in.
 */
export function bindEmitter<E extends object>(ctx: Context, emitter: E): E {
  return context.bind(ctx, emitter);
}

/**
 * Runs `work` inside a new span, a child of `parent` (default: the active context), and ends it: with an error
 * status when `work` throws (the error is rethrown). With tracing off the span is the API's no-op span.
 */
export async function inSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes; parent?: Context },
  work: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = options.parent ?? context.active();
  const span = tracer().startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, ...(options.attributes ? { attributes: options.attributes } : {}) }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => work(span));
  } catch (error) {
    failSpan(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** Marks a span failed by an error (recorded as an exception event; its message may name internals, never secrets). */
export function failSpan(span: Span, error: unknown, message?: string): void {
  if (error instanceof Error) span.recordException(error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: message ?? (error instanceof Error ? error.message : String(error)) });
}

/**
 * `trace_id` and `span_id` of the active span for a log line (pino's `mixin`), or no fields when none is active or
 * its trace is not sampled (no trace holds those ids: a line of a sampled-out request names none).
 * A new object every time: pino merges the line's own fields into it. With tracing off this is one context lookup.
 */
export function traceLogFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const sc = span.spanContext();
  return (sc.traceFlags & TraceFlags.SAMPLED) !== 0 && trace.isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}

/** pino options for a process's logger: with tracing on, `traceLogFields` as its `mixin`; off, nothing (no cost per line). */
export function traceLogOptions(config: TracingConfig): { mixin?: typeof traceLogFields } {
  return config.exporter ? { mixin: traceLogFields } : {};
}
