import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
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

/** `GET /metrics` on its own small HTTP server on 127.0.0.1 (the operator port). */
export function startMetricsServer(registry: Registry, port: number): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") {
      res.writeHead(404, { "Content-Type": "text/plain" }).end("not found\n");
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { "Content-Type": registry.contentType }).end(text),
      () => res.writeHead(500, { "Content-Type": "text/plain" }).end("metrics unavailable\n"),
    );
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host: "127.0.0.1" }, () => {
      server.off("error", reject);
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
