import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";

export interface MetricsServer {
  /** The port bound (useful when 0 asked for a free one). */
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (Prometheus text format) for one registry on 127.0.0.1
 * only: metrics are for operators, never on a public port.
 */
export function startMetricsServer(registry: Registry, port: number): Promise<MetricsServer> {
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
  server.keepAliveTimeout = 5_000;
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

export { collectProcessMetrics } from "./process-metrics.js";
export { lintExposition } from "./exposition-lint.js";
