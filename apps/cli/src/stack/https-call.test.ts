import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { developmentCertificate } from "@rms/gateway";
import { afterAll, beforeAll, expect, it } from "vitest";
import { httpsCall } from "./processes.js";

// A server that answers /whole in full and cuts /cut off mid-body (as a gateway SIGKILLed mid-download does).
let dataDir: string;
let server: Server;
let port: number;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "rms-https-call-"));
  const { cert, key } = await developmentCertificate(join(dataDir, "tls"));
  server = createServer({ cert, key }, (req, res) => {
    res.writeHead(200, { "content-type": "text/plain", "content-length": "100" });
    if (req.url === "/whole") return void res.end("x".repeat(100));
    res.write("x".repeat(10), () => res.socket?.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "localhost", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(dataDir, { recursive: true, force: true });
});

it("a whole response resolves with its body", async () => {
  const reply = await httpsCall(dataDir, port, "GET", "/whole");
  expect(reply.status).toBe(200);
  expect(reply.body).toHaveLength(100);
});

it("a response cut short mid-body rejects instead of staying pending (the chaos count that never returned)", async () => {
  await expect(httpsCall(dataDir, port, "GET", "/cut")).rejects.toThrow();
});
