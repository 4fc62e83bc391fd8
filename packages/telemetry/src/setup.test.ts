// Tracing as a process starts it (startTracing with the OTLP/HTTP JSON exporter), exporting to an in-process
// receiver: what the exporter sends, and the propagation helpers the adapters use, on a real tracer provider.
import { context, ROOT_CONTEXT, SpanKind, trace } from "@opentelemetry/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tracingConfig } from "./config.js";
import { contextOfStored, extractContext, injectContext, inSpan, startEdgeSpan, storedTrace, traceField, traceLogFields, tracer, untraced } from "./context.js";
import { startTracing, type Tracing } from "./setup.js";
import { tracingOn } from "./state.js";
import { startTracingToReceiver, type OtlpReceiver } from "./testkit/index.js";

let receiver: OtlpReceiver;
let tracing: Tracing;

beforeAll(async () => {
  ({ receiver, tracing } = await startTracingToReceiver("rms-test"));
});

afterAll(async () => {
  await tracing?.shutdown();
  await receiver?.close();
});

describe("with tracing off", () => {
  it("starts nothing and the helpers find no span", async () => {
    const off = startTracing(tracingConfig({}, "x"));
    expect(off.enabled).toBe(false);
    await off.shutdown();
    expect(storedTrace(ROOT_CONTEXT)).toBeUndefined();
  });
});

describe("with tracing on", () => {
  it("is on, and a stored trace continues the trace of the span that stored it", async () => {
    expect(tracing.enabled).toBe(true);
    expect(tracingOn()).toBe(true);
    let stored: ReturnType<typeof storedTrace>;
    let traceId = "";
    await inSpan("request", { kind: SpanKind.SERVER }, async (span) => {
      traceId = span.spanContext().traceId;
      stored = storedTrace();
      expect(traceField()).toEqual({ trace: stored });
      expect(traceLogFields()).toEqual({ trace_id: traceId, span_id: span.spanContext().spanId });
    });
    expect(stored!.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(traceLogFields()).toEqual({});

    // Later, in another process: the stored field is the parent of the worker's span.
    await inSpan("delivery", { kind: SpanKind.CONSUMER, parent: contextOfStored(stored) }, async (span) => {
      expect(span.spanContext().traceId).toBe(traceId);
    });
  });

  it("records nothing, and stores and sends no context, inside `untraced`", async () => {
    await untraced(() =>
      inSpan("probe", {}, async (span) => {
        expect(span.isRecording()).toBe(false);
        expect(storedTrace()).toBeUndefined();
        const headers: Record<string, string> = {};
        injectContext(context.active(), (key, value) => (headers[key] = value));
        expect(headers).toEqual({});
      }),
    );
  });

  it("under a sampled-out parent records nothing and logs no ids, yet stores and sends the parent's trace as not sampled", async () => {
    const unsampled = contextOfStored({ traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00" });
    await inSpan("sampled out", { kind: SpanKind.CONSUMER, parent: unsampled }, async (span) => {
      expect(span.isRecording()).toBe(false);
      expect(traceLogFields()).toEqual({});
      // Its children in other processes (a worker's delivery) stay unsampled: the flag travels with the trace id.
      expect(storedTrace()!.traceparent).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-00$/);
    });
  });

  it("ignores a missing or malformed stored trace (a new trace starts)", () => {
    expect(trace.getSpan(contextOfStored(undefined))).toBeUndefined();
    expect(trace.getSpan(contextOfStored({ traceparent: "00-nothex-00-01" }))).toBeUndefined();
    expect(trace.getSpan(contextOfStored({ traceparent: 7 as unknown as string }))).toBeUndefined();
  });

  it("carries the context through headers: inject on one side, extract on the other, with tracestate", () => {
    const incoming = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "vendor=1" };
    const parent = extractContext((key) => incoming[key as keyof typeof incoming], ROOT_CONTEXT);
    expect(trace.getSpanContext(parent)).toMatchObject({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", isRemote: true });
    const span = tracer().startSpan("client", { kind: SpanKind.CLIENT }, parent);
    const outgoing: Record<string, string> = {};
    injectContext(trace.setSpan(parent, span), (key, value) => (outgoing[key] = value));
    span.end();
    expect(outgoing.traceparent).toBe(`00-0af7651916cd43dd8448eb211c80319c-${span.spanContext().spanId}-01`);
    expect(outgoing.tracestate).toBe("vendor=1");
    expect(storedTrace(trace.setSpan(parent, span))).toEqual({ traceparent: outgoing.traceparent, tracestate: "vendor=1" });
  });

  // Issue 31, item 6: at the public edge a client's traceparent is a link, not the parent.
  it("starts an edge span as a new root, the client's context kept as a link (its trace id and sampled flag decide nothing)", () => {
    const client = extractContext((key) => (key === "traceparent" ? "00-1bf92f3577b34da6a3ce929d0e0e4731-00f067aa0ba902b7-01" : undefined), ROOT_CONTEXT);
    const { span, context: edge } = startEdgeSpan("edge", SpanKind.SERVER, { "rms.request_id": "req_1" }, client);
    span.end();
    expect(span.spanContext().traceId).not.toBe("1bf92f3577b34da6a3ce929d0e0e4731");
    expect(trace.getSpan(edge)).toBe(span);
    expect(storedTrace(edge)!.traceparent).toMatch(new RegExp(`^00-${span.spanContext().traceId}-`));
  });

  it("ends a span whose work throws with an error status, and rethrows", async () => {
    await expect(inSpan("failing", {}, async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(context.active()).toBe(ROOT_CONTEXT);
  });

  it("exports the spans, with the service name, to the OTLP endpoint as JSON (at the latest at shutdown)", async () => {
    await tracing.shutdown();
    expect(tracingOn()).toBe(false);
    const spans = receiver.spans();
    // (Nothing of "probe", started inside `untraced`.)
    expect(spans.map((s) => s.name).sort()).toEqual(["client", "delivery", "edge", "failing", "request"]);
    const edge = spans.find((s) => s.name === "edge")!;
    expect(edge.parentSpanId).toBe("");
    expect(edge.links).toEqual([{ traceId: "1bf92f3577b34da6a3ce929d0e0e4731", spanId: "00f067aa0ba902b7" }]);
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(["rms-test"]));
    const request = spans.find((s) => s.name === "request")!;
    const delivery = spans.find((s) => s.name === "delivery")!;
    expect(delivery.traceId).toBe(request.traceId);
    expect(delivery.parentSpanId).toBe(request.spanId);
    expect(delivery.kind).toBe(5);
    expect(spans.find((s) => s.name === "failing")!.statusCode).toBe(2);
    expect(spans.find((s) => s.name === "client")!.traceId).toBe("0af7651916cd43dd8448eb211c80319c");
  });
});
