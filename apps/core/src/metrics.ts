import { ServerInterceptingCall, status as GrpcStatus, type Metadata, type ServerInterceptingCallInterface, type ServerInterceptor } from "@grpc/grpc-js";
import { collectProcessMetrics } from "@rms/metrics-server";
import type { MongoClient } from "mongodb";
import { Counter, Histogram, Registry } from "prom-client";
import { histogramIn } from "./metrics-registry.js";

/** Seconds, from a sub-millisecond index lookup to the 10 s call deadline. */
const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The labels of the conventional gRPC server metrics (as go-grpc-prometheus and grpc-ecosystem name them). */
type CallLabels = { grpc_type: string; grpc_service: string; grpc_method: string };

/** `/pkg.Service/Method` → service and method; what is not of that shape is kept whole as the method. */
export function callLabels(path: string, requestStream: boolean, responseStream: boolean): CallLabels {
  const match = /^\/([^/]+)\/([^/]+)$/.exec(path);
  const grpc_type = requestStream ? (responseStream ? "bidi_stream" : "client_stream") : responseStream ? "server_stream" : "unary";
  return { grpc_type, grpc_service: match?.[1] ?? "unknown", grpc_method: match?.[2] ?? path };
}

/**
 * The `client` label of a call: the name of its entry in core's caller table, `anonymous` or `unknown`
 * (clients/table.ts). Names come from the table, so the label's values are bounded by it.
 */
export type ClientLabeller = (metadata: Metadata, call: ServerInterceptingCallInterface) => string;

/** Before a call's metadata has arrived (a call cancelled first) nobody is known. */
const NOBODY = "anonymous";

/** Core's Prometheus metrics: every gRPC call (health and reflection included) by client, database commands by name. One registry per core. */
export class CoreMetrics {
  readonly registry = new Registry();
  private readonly started = new Counter({
    name: "grpc_server_started_total",
    help: "gRPC calls started on the server, by type, service, method and client (its name in core's caller table).",
    labelNames: ["grpc_type", "grpc_service", "grpc_method", "client"] as const,
    registers: [this.registry],
  });
  private readonly handled = new Counter({
    name: "grpc_server_handled_total",
    help: "gRPC calls completed on the server, by type, service, method, client and status code name.",
    labelNames: ["grpc_type", "grpc_service", "grpc_method", "client", "grpc_code"] as const,
    registers: [this.registry],
  });
  private readonly handlingSeconds = new Histogram({
    name: "grpc_server_handling_seconds",
    help: "Time from the start of a gRPC call to its status, by type, service, method and client.",
    labelNames: ["grpc_type", "grpc_service", "grpc_method", "client"] as const,
    buckets: BUCKETS,
    registers: [this.registry],
  });

  constructor(private readonly clientOf: ClientLabeller = () => NOBODY) {
    collectProcessMetrics(this.registry);
  }

  /**
   * A server interceptor that counts and times every call the server runs, whichever service
   * registered it (ours, health, reflection), by the client that makes it: the status it ends with, or CANCELLED.
   */
  readonly interceptor: ServerInterceptor = (descriptor, call) => {
    const path = callLabels(descriptor.path, descriptor.requestStream, descriptor.responseStream);
    let labels = { ...path, client: NOBODY };
    const began = performance.now();
    let started = false;
    const start = () => {
      if (started) return;
      started = true;
      this.started.inc(labels);
    };
    let ended = false;
    const end = (code: GrpcStatus) => {
      if (ended) return;
      ended = true;
      start();
      this.handled.inc({ ...labels, grpc_code: GrpcStatus[code] ?? String(code) });
      this.handlingSeconds.observe(labels, (performance.now() - began) / 1000);
    };
    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          // Counted once the caller is known: its credential comes with the metadata.
          onReceiveMetadata: (metadata, pass) => {
            labels = { ...path, client: this.clientOf(metadata, call) };
            start();
            pass(metadata);
          },
          onCancel: () => end(GrpcStatus.CANCELLED),
        }),
      sendStatus: (status, next) => {
        end(status.code);
        next(status);
      },
    });
  };

  /** Times every command of a client created with `monitorCommands: true`. */
  watch(mongo: MongoClient): void {
    watchCommands(mongo, this.registry);
  }
}

/** Times every command of a client created with `monitorCommands: true` into `mongodb_command_duration_seconds` (core and workers). */
export function watchCommands(mongo: MongoClient, registry: Registry): void {
  const seconds = histogramIn(registry, {
    name: "mongodb_command_duration_seconds",
    help: "Database command round trips seen by the driver (command monitoring), by command name and outcome.",
    labelNames: ["command", "outcome"] as const,
    buckets: BUCKETS,
  });
  mongo.on("commandSucceeded", (event) => seconds.observe({ command: event.commandName, outcome: "ok" }, event.duration / 1000));
  mongo.on("commandFailed", (event) => seconds.observe({ command: event.commandName, outcome: "error" }, event.duration / 1000));
}
