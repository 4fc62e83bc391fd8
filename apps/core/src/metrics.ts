import { status as GrpcStatus } from "@grpc/grpc-js";
import type { MongoClient } from "mongodb";
import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** Seconds, from a sub-millisecond index lookup to the 10 s call deadline. */
const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Core's Prometheus metrics: gRPC calls by method and code, database commands by name. One registry per core. */
export class CoreMetrics {
  readonly registry = new Registry();
  private readonly calls = new Counter({
    name: "grpc_server_handled_total",
    help: "gRPC calls completed, by full method name and status code.",
    labelNames: ["grpc_method", "grpc_code"] as const,
    registers: [this.registry],
  });
  private readonly callSeconds = new Histogram({
    name: "grpc_server_handling_seconds",
    help: "Time to handle a gRPC call, by full method name and status code.",
    labelNames: ["grpc_method", "grpc_code"] as const,
    buckets: BUCKETS,
    registers: [this.registry],
  });
  private readonly commandSeconds = new Histogram({
    name: "mongodb_command_duration_seconds",
    help: "Database command round trips seen by the driver (command monitoring), by command name and outcome.",
    labelNames: ["command", "outcome"] as const,
    buckets: BUCKETS,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  call(method: string, code: GrpcStatus, durationMs: number): void {
    const labels = { grpc_method: method, grpc_code: GrpcStatus[code] ?? String(code) };
    this.calls.inc(labels);
    this.callSeconds.observe(labels, durationMs / 1000);
  }

  /** Times every command of a client created with `monitorCommands: true`. */
  watch(mongo: MongoClient): void {
    mongo.on("commandSucceeded", (event) => this.commandSeconds.observe({ command: event.commandName, outcome: "ok" }, event.duration / 1000));
    mongo.on("commandFailed", (event) => this.commandSeconds.observe({ command: event.commandName, outcome: "error" }, event.duration / 1000));
  }
}
