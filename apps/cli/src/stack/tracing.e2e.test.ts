// Tracing across processes (docs/observability.md, "Tracing"), against the real processes: gateway, core and one
// worker on a real database, each exporting its spans over OTLP/HTTP (JSON) to a receiver in this test. A create
// sent with a W3C traceparent is one trace: the gateway's request span (a new root, the client's context kept as a
// link: issue 31), core's gRPC spans, and, later, the worker's delivery of its event; a job's run continues the trace
// of the request that created it; log lines carry the ids.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { newMasterKeyText } from "@rms/core/settings";
import { startOtlpReceiver, type ReceivedSpan } from "@rms/telemetry/testkit";
import { testDatabaseName } from "@rms/test-db";
import { dropDatabase, eventually } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient } from "mongodb";
import { afterAll, expect, inject, it } from "vitest";
import type { Child } from "./children.js";
import { addEndpoints, startArrivalReceiver } from "./noisy-neighbour.js";
import { freePort, httpsCall, newTestKey, startCoreProcess, startGatewayProcess, startWorkerProcess } from "./processes.js";
import { PublicApi } from "./public-api.js";

const dataDir = mkdtempSync(join(tmpdir(), "rms-tracing-"));
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  rmSync(dataDir, { recursive: true, force: true });
});

/** The JSON log lines a child writes (its stdout piped to us). */
function logLines(child: Child): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  createInterface({ input: child.process.stdout! }).on("line", (line) => {
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // not a log line
    }
  });
  return lines;
}

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";
const JOB_TRACE_ID = "5cf92f3577b34da6a3ce929d0e0e4737";

it("one trace spans gateway, core and the worker's delivery of the event; a job's run continues its create's trace; log lines carry the ids", {
  timeout: 180_000,
}, async () => {
  const mongoUri = inject("mongoUri");
  const databaseName = testDatabaseName("tracing");
  cleanups.push(() => dropDatabase(mongoUri, databaseName));
  const otlp = await startOtlpReceiver();
  cleanups.push(() => otlp.close());
  // Tracing on in every process, by the standard variables only; a short batch delay so spans arrive quickly.
  const tracing = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_BSP_SCHEDULE_DELAY: "100", LOG_LEVEL: "info" };
  const settings = { RMS_SECRET_KEY: newMasterKeyText(), WEBHOOK_ALLOW_PRIVATE: "true", WEBHOOK_RETRY_SCHEDULE: "1s,2s,3s" };

  const corePort = await freePort();
  const coreAddr = `127.0.0.1:${corePort}`;
  const core = await startCoreProcess({ mongoUri, databaseName, port: corePort, env: { ...settings, ...tracing }, stdout: "pipe" });
  cleanups.push(() => core.stop(5_000));
  const coreLog = logLines(core);
  const gatewayPort = await freePort();
  const gateway = await startGatewayProcess({ coreAddr, mongoUri, databaseName, dataDir, port: gatewayPort, env: tracing, stdout: "pipe" });
  cleanups.push(() => gateway.stop(5_000));
  const gatewayLog = logLines(gateway);
  const worker = startWorkerProcess({ mongoUri, databaseName, env: { ...settings, ...tracing }, stdout: "pipe" });
  cleanups.push(() => worker.stop(10_000));
  const workerLog = logLines(worker);
  const receiver = await startArrivalReceiver();
  cleanups.push(() => receiver.close());

  const mongo = await new MongoClient(mongoUri).connect();
  cleanups.push(() => mongo.close());
  const { secret } = await newTestKey(coreAddr);
  const api = new PublicApi(dataDir, gatewayPort, secret);
  cleanups.push(async () => api.close());
  await addEndpoints(api, 1, () => receiver.url("/hook"), "tracing");

  // The client's own trace: the gateway starts a new one and links the client's span.
  const created = await httpsCreate(api, `00-${TRACE_ID}-${CLIENT_SPAN}-01`, "name=traced", "/v1/resources");
  await eventually(() => expect(receiver.createdEvent.get(created.id)).toBeDefined(), { timeoutMs: 30_000 });

  const inTrace = (traceId: string) => otlp.spans().filter((s) => s.traceId === traceId);
  /** The gateway's request span of the trace whose client span was `clientTrace`'s (by its link). */
  const edgeOf = (clientTrace: string) =>
    otlp.spans().find((s) => s.service === "rms-gateway" && s.kind === 2 && s.links.some((l) => l.traceId === clientTrace));
  let spans: ReceivedSpan[] = [];
  await eventually(
    () => {
      spans = inTrace(edgeOf(TRACE_ID)?.traceId ?? "none");
      const summary = JSON.stringify(otlp.spans().map((s) => [s.service, s.name, s.traceId, s.spanId, s.parentSpanId]));
      expect(
        spans.some((s) => s.service === "rms-worker" && s.name === "webhook delivery"),
        summary,
      ).toBe(true);
    },
    { timeoutMs: 30_000 },
  );
  expect(new Set(spans.map((s) => s.service))).toEqual(new Set(["rms-gateway", "rms-core", "rms-worker"]));
  // Nothing was recorded under the client's trace id.
  expect(inTrace(TRACE_ID)).toEqual([]);
  // The health check the test polled while the gateway started records nothing, not even its call to core.
  expect(otlp.spans().filter((s) => s.name === "GET /v1/status" || s.name.startsWith("grpc.health.v1."))).toEqual([]);

  // gateway: the request's span, a new root linked to the client's; its gRPC calls to core are its children.
  const request = spans.find((s) => s.service === "rms-gateway" && s.kind === 2)!;
  expect(request).toMatchObject({ name: "POST /v1/resources", parentSpanId: "", links: [{ traceId: TRACE_ID, spanId: CLIENT_SPAN }] });
  const traceId = request.traceId;
  expect(request.attributes).toMatchObject({ "http.request.method": "POST", "http.route": "/v1/resources", "http.response.status_code": 201 });
  const createCall = spans.find((s) => s.service === "rms-gateway" && s.kind === 3 && s.name === "rms.v1.ResourceService/CreateResource")!;
  expect(createCall.parentSpanId).toBe(request.spanId);
  // core: the call's SERVER span, a child of the gateway's CLIENT span.
  const served = spans.find((s) => s.service === "rms-core" && s.name === "rms.v1.ResourceService/CreateResource")!;
  expect(served).toMatchObject({ kind: 2, parentSpanId: createCall.spanId });
  // worker: the delivery continues the span that wrote the event (core's), read from the event document.
  const delivery = spans.find((s) => s.service === "rms-worker" && s.name === "webhook delivery")!;
  expect(delivery).toMatchObject({ kind: 5, parentSpanId: served.spanId, statusCode: 0 });
  expect(delivery.attributes).toMatchObject({
    "rms.event.type": "resource.created",
    "rms.event.id": receiver.createdEvent.get(created.id),
    "rms.delivery.outcome": "succeeded",
  });
  // What carried it: the event document's `trace` (core's span that wrote it), never shown by the API.
  const eventId = receiver.createdEvent.get(created.id)!;
  const stored = await mongo.db(databaseName).collection<{ _id: string; trace?: unknown }>("events").findOne({ _id: eventId });
  // The client's trace id is never stored.
  expect(stored?.trace).toEqual({ traceparent: `00-${traceId}-${served.spanId}-01` });
  expect(JSON.parse((await api.request("GET", `/v1/events/${eventId}`)).body)).not.toHaveProperty("trace");

  // A job: its run, on the worker, continues the trace of the request that created it.
  const job = await httpsCreate(api, `00-${JOB_TRACE_ID}-${CLIENT_SPAN}-01`, undefined, "/v1/jobs", {
    type: "resources.import",
    params: { items: [{ name: "imported" }] },
  });
  let jobTrace = "";
  await eventually(
    () => {
      jobTrace = edgeOf(JOB_TRACE_ID)?.traceId ?? "none";
      const run = inTrace(jobTrace).find((s) => s.service === "rms-worker" && s.name === "job run");
      expect(run?.attributes).toMatchObject({ "rms.job.id": job.id, "rms.job.type": "resources.import" });
      const createJob = inTrace(jobTrace).find((s) => s.service === "rms-core" && s.name === "rms.v1.JobService/CreateJob");
      expect(run!.parentSpanId).toBe(createJob!.spanId);
    },
    { timeoutMs: 30_000 },
  );

  const storedJob = await mongo.db(databaseName).collection<{ _id: string; trace?: { traceparent: string } }>("jobs").findOne({ _id: job.id });
  expect(storedJob?.trace?.traceparent).toMatch(new RegExp(`^00-${jobTrace}-[0-9a-f]{16}-01$`));
  expect(JSON.parse((await api.request("GET", `/v1/jobs/${job.id}`)).body)).not.toHaveProperty("trace");

  // Log lines written inside a span carry its ids: the gateway's request line, core's call line, the worker's job lines.
  await eventually(() => {
    const requestLine = gatewayLog.find((l) => l.msg === "request" && l.path === "/v1/resources" && l.method === "POST");
    expect(requestLine).toMatchObject({ trace_id: traceId, span_id: request.spanId });
    expect(coreLog.find((l) => l.msg === "call" && l.method === "/rms.v1.ResourceService/CreateResource")).toMatchObject({
      trace_id: traceId,
      span_id: served.spanId,
    });
    const run = inTrace(jobTrace).find((s) => s.name === "job run")!;
    expect(workerLog.find((l) => l.msg === "jobs: claimed" && l.job === job.id)).toMatchObject({ trace_id: jobTrace, span_id: run.spanId });
  });
  // A line outside any span has neither.
  expect(workerLog.find((l) => l.msg === "worker running")).not.toHaveProperty("trace_id");
});

/** A POST with the client's traceparent header (the public API helper sends none). */
async function httpsCreate(api: PublicApi, traceparent: string, form: string | undefined, path: string, json?: unknown): Promise<{ id: string }> {
  const reply = await httpsCall(api.dataDir, api.port, "POST", path, {
    key: api.key,
    agent: api.agent,
    ...(json !== undefined ? { form: JSON.stringify(json) } : form !== undefined ? { form } : {}),
    headers: { traceparent, ...(json !== undefined ? { "content-type": "application/json" } : {}) },
  });
  expect(reply.status, reply.body).toBeLessThan(300);
  return JSON.parse(reply.body) as { id: string };
}
