import { ConfigError } from "@rms/config";
import { parseKeyPairsIntoRecord } from "@opentelemetry/core";

/** How a trace is chosen for recording (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG). */
export type SamplerName = "always_on" | "always_off" | "traceidratio" | "parentbased_always_on" | "parentbased_always_off" | "parentbased_traceidratio";

const SAMPLERS: readonly SamplerName[] = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
];
const PROTOCOLS = ["http/protobuf", "http/json"] as const;
export type OtlpProtocol = (typeof PROTOCOLS)[number];

/** Tracing as the standard OTEL_* variables ask for it; `exporter: null` is off (the API's no-op tracer, nothing recorded). */
export interface TracingConfig {
  /** The OTLP/HTTP exporter, or null: tracing off. */
  readonly exporter: { readonly protocol: OtlpProtocol } | null;
  /** `service.name` of every span: OTEL_SERVICE_NAME, else `service.name` in OTEL_RESOURCE_ATTRIBUTES, else the process's own name. */
  readonly serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES, as given (`service.name` left to `serviceName`). */
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly sampler: { readonly name: SamplerName; readonly ratio: number };
  /** Batch span processor: delay between exports (ms), queue size, spans per export (OTEL_BSP_*). */
  readonly batch: { readonly scheduledDelayMs: number; readonly maxQueueSize: number; readonly maxExportBatchSize: number };
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The share of traces recorded in production (NODE_ENV=production, as the image sets) when OTEL_TRACES_SAMPLER is
 * unset: the default sampler there is `parentbased_traceidratio` at this ratio, so tracing at volume records one
 * request in ten and the others cost a span that records nothing (docs/observability.md, "Sampling"). Elsewhere
 * (development, tests, the bench) the default stays the specification's `parentbased_always_on`.
 */
export const PRODUCTION_SAMPLE_RATIO = 0.1;

function value(env: Env, name: string): string | undefined {
  const v = env[name]?.trim();
  return v === undefined || v === "" ? undefined : v;
}

function httpUrl(env: Env, name: string): string | undefined {
  const v = value(env, name);
  if (v === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new ConfigError(`${name} must be an http:// or https:// URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new ConfigError(`${name} must be an http:// or https:// URL`);
  return v;
}

function positive(env: Env, name: string, fallback: number): number {
  const v = value(env, name);
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new ConfigError(`${name} must be a positive integer`);
  return n;
}

/**
 * Reads the OTEL_* variables this service honours (docs/observability.md, "Tracing"); a value it cannot honour is a
 * ConfigError naming the variable. Tracing is on only when asked for: OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint
 * (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) with OTEL_TRACES_EXPORTER unset; and never with
 * OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. The exporter reads its own transport settings (endpoint,
 * headers, timeout, compression, certificates) from the same variables; they are checked here only for being URLs.
 */
export function tracingConfig(env: Env, defaultServiceName: string): TracingConfig {
  // Read by the OTLP exporter itself, not here: "OTEL_EXPORTER_OTLP_HEADERS" (a collector's credentials; the Helm
  // chart takes it from a Secret, tracing.headersSecret).
  const disabled = value(env, "OTEL_SDK_DISABLED");
  if (disabled !== undefined && !["true", "false"].includes(disabled.toLowerCase())) throw new ConfigError("OTEL_SDK_DISABLED must be true or false");
  const exporters = (value(env, "OTEL_TRACES_EXPORTER") ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== "");
  const unknown = exporters.find((e) => e !== "otlp" && e !== "none");
  if (unknown !== undefined) throw new ConfigError(`OTEL_TRACES_EXPORTER must be otlp or none (${unknown} is not supported)`);
  const endpoint = httpUrl(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") ?? httpUrl(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  const protocolVariable =
    value(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") !== undefined ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const protocol = value(env, protocolVariable) ?? "http/protobuf";
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) throw new ConfigError(`${protocolVariable} must be http/protobuf or http/json`);

  const production = value(env, "NODE_ENV") === "production";
  const sampler = (value(env, "OTEL_TRACES_SAMPLER") ?? (production ? "parentbased_traceidratio" : "parentbased_always_on")).toLowerCase() as SamplerName;
  if (!SAMPLERS.includes(sampler)) throw new ConfigError(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(", ")}`);
  const arg = value(env, "OTEL_TRACES_SAMPLER_ARG");
  const ratio = arg === undefined ? (production ? PRODUCTION_SAMPLE_RATIO : 1) : Number(arg);
  if (sampler.endsWith("traceidratio") && !(Number.isFinite(ratio) && ratio >= 0 && ratio <= 1))
    throw new ConfigError("OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1");

  let attributes: Record<string, string>;
  try {
    attributes = parseKeyPairsIntoRecord(value(env, "OTEL_RESOURCE_ATTRIBUTES"));
  } catch {
    throw new ConfigError("OTEL_RESOURCE_ATTRIBUTES must be key=value pairs separated by commas");
  }
  const { "service.name": fromAttributes, ...resourceAttributes } = attributes;

  const wanted = exporters.includes("otlp") || (exporters.length === 0 && endpoint !== undefined);
  const on = wanted && !exporters.includes("none") && disabled?.toLowerCase() !== "true";
  return {
    exporter: on ? { protocol: protocol as OtlpProtocol } : null,
    serviceName: value(env, "OTEL_SERVICE_NAME") ?? fromAttributes ?? defaultServiceName,
    resourceAttributes,
    sampler: { name: sampler, ratio },
    batch: {
      scheduledDelayMs: positive(env, "OTEL_BSP_SCHEDULE_DELAY", 5_000),
      maxQueueSize: positive(env, "OTEL_BSP_MAX_QUEUE_SIZE", 2_048),
      maxExportBatchSize: positive(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
    },
  };
}
