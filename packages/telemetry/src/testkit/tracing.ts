import { tracingConfig } from "../config.js";
import { startTracing, type Tracing } from "../setup.js";
import { startOtlpReceiver, type OtlpReceiver } from "./otlp-receiver.js";

/**
 * Tracing started as a process starts it (`startTracing` with the OTLP/HTTP JSON exporter) as `service`, exporting
 * to a new in-process receiver. The exporter reads its endpoint from the process's environment, as in production:
 * this sets OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_PROTOCOL of this process to the receiver's.
 */
export async function startTracingToReceiver(service: string): Promise<{ receiver: OtlpReceiver; tracing: Tracing }> {
  const receiver = await startOtlpReceiver();
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.endpoint;
  process.env.OTEL_EXPORTER_OTLP_PROTOCOL = "http/json";
  return { receiver, tracing: startTracing(tracingConfig(process.env, service)) };
}
