import { context, diag, DiagLogLevel, propagation, trace, type DiagLogger } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
} from "@opentelemetry/sdk-trace";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import type { TracingConfig } from "./config.js";
import { setTracingOn } from "./state.js";

/** Tracing as started in this process. */
export interface Tracing {
  readonly enabled: boolean;
  /** Exports what is still queued (for at most SHUTDOWN_EXPORT_MS), then stops; the last step of a process's stop. */
  shutdown(): Promise<void>;
}

/** How long a process's stop waits for the last spans to be exported. */
export const SHUTDOWN_EXPORT_MS = 3_000;

const OFF: Tracing = { enabled: false, shutdown: async () => undefined };

function samplerOf({ name, ratio }: TracingConfig["sampler"]): Sampler {
  const root = name.endsWith("always_off")
    ? new AlwaysOffSampler()
    : name.endsWith("traceidratio")
      ? new TraceIdRatioBasedSampler(ratio)
      : new AlwaysOnSampler();
  return name.startsWith("parentbased_") ? new ParentBasedSampler({ root }) : root;
}

/**
 * Starts tracing for this process when the configuration asks for it: the global tracer provider (an OTLP/HTTP
 * exporter behind a batch processor), the AsyncLocalStorage context manager and the W3C trace-context propagator.
 * Off, it registers nothing: every span the code starts is the API's no-op span, and the adapters skip tracing
 * altogether (`tracingOn()`). Call once, before the process starts serving. `problems` hears the exporter's own
 * errors (a collector that does not answer), which never stop the process.
 */
export function startTracing(config: TracingConfig, problems?: (message: string) => void): Tracing {
  if (config.exporter === null) return OFF;
  if (problems) diag.setLogger(diagLogger(problems), DiagLogLevel.WARN);
  const exporter = config.exporter.protocol === "http/json" ? new JsonExporter() : new ProtobufExporter();
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ ...config.resourceAttributes, [ATTR_SERVICE_NAME]: config.serviceName }),
    sampler: samplerOf(config.sampler),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        scheduledDelayMillis: config.batch.scheduledDelayMs,
        maxQueueSize: config.batch.maxQueueSize,
        maxExportBatchSize: Math.min(config.batch.maxExportBatchSize, config.batch.maxQueueSize),
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  setTracingOn(true);
  return {
    enabled: true,
    async shutdown() {
      // Bounded: a collector that does not answer must not hold up a process's stop.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          problems?.(`trace export at shutdown took over ${SHUTDOWN_EXPORT_MS} ms; the spans still queued are dropped`);
          resolve();
        }, SHUTDOWN_EXPORT_MS);
        timer.unref();
      });
      await Promise.race([provider.shutdown().catch((error: unknown) => problems?.(`trace export at shutdown failed: ${String(error)}`)), late]);
      clearTimeout(timer);
      setTracingOn(false);
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/** The SDK's diagnostics: only its errors and warnings, as one line each. */
function diagLogger(say: (message: string) => void): DiagLogger {
  const ignore = () => undefined;
  const line = (message: string, ...args: unknown[]) => say([message, ...args.map(String)].join(" "));
  return { error: line, warn: line, info: ignore, debug: ignore, verbose: ignore };
}

/**
 * A process's start with tracing around it: the process stops first and tracing after it (so the spans of its last
 * work are exported), and a start that fails stops tracing too.
 */
export async function tracedProcess(tracing: Tracing, start: () => Promise<{ stop(): Promise<void> }>): Promise<{ stop(): Promise<void> }> {
  let running: { stop(): Promise<void> };
  try {
    running = await start();
  } catch (error) {
    await tracing.shutdown();
    throw error;
  }
  return {
    async stop() {
      try {
        await running.stop();
      } finally {
        await tracing.shutdown();
      }
    },
  };
}
