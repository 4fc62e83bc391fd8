// A collector that accepts connections and never answers must not hold up a process's stop (setup.ts).
import { createServer, type Socket } from "node:net";
import { afterAll, expect, it } from "vitest";
import { tracingConfig } from "./config.js";
import { inSpan } from "./context.js";
import { SHUTDOWN_EXPORT_MS, startTracing } from "./setup.js";

const sockets: Socket[] = [];
const silent = createServer((socket) => sockets.push(socket));
afterAll(() => {
  for (const socket of sockets) socket.destroy();
  silent.close();
});

it(`stops within about ${SHUTDOWN_EXPORT_MS} ms when the collector never answers, saying so`, async () => {
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  const { port } = silent.address() as { port: number };
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${port}`;
  const problems: string[] = [];
  const tracing = startTracing(tracingConfig(process.env, "x"), (message) => problems.push(message));
  await inSpan("work", {}, async () => undefined);
  const started = performance.now();
  await tracing.shutdown();
  const took = performance.now() - started;
  expect(took).toBeGreaterThanOrEqual(SHUTDOWN_EXPORT_MS - 100);
  expect(took).toBeLessThan(SHUTDOWN_EXPORT_MS + 1_500);
  expect(problems.some((p) => p.includes("trace export at shutdown took over"))).toBe(true);
}, 20_000);
