import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import express from "express";
import { afterAll, beforeAll, expect, it } from "vitest";
import { requestTimeout } from "./request-timeout.js";

// The per-request form of Node's requestTimeout (the server's is off so uploads may take longer): a short limit here.
let server: Server;
let port: number;
beforeAll(async () => {
  const app = express();
  app.use(requestTimeout((req) => req.path === "/upload", 300));
  // Reads the body to its end, then answers.
  app.post(["/upload", "/form"], (req, res) => {
    let size = 0;
    req.on("data", (chunk: Buffer) => (size += chunk.length));
    req.on("end", () => res.status(200).send(String(size)));
  });
  server = createServer({ requestTimeout: 0 }, app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Sends the headers and `parts` of a body, `gapMs` apart; answers what came back and whether the server closed. */
function trickle(path: string, parts: string[], gapMs: number): Promise<{ answer: string; closedEarly: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let answer = "";
    let sent = 0;
    const length = parts.join("").length;
    socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\n`);
    const timer = setInterval(() => {
      if (sent < parts.length && !socket.destroyed) socket.write(parts[sent++]!);
    }, gapMs);
    socket.on("data", (chunk) => (answer += chunk.toString()));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearInterval(timer);
      resolve({ answer, closedEarly: sent < parts.length });
    });
    socket.on("data", () => {
      if (answer.includes("\r\n\r\n") && /\r\n\r\n\d+$/.test(answer)) socket.end();
    });
  });
}

it("a body that has not arrived within the limit is answered 408 and its connection closed", async () => {
  const { answer, closedEarly } = await trickle("/form", ["a", "b", "c", "d", "e", "f", "g", "h"], 100);
  expect(answer).toMatch(/^HTTP\/1\.1 408/);
  expect(closedEarly).toBe(true);
});

it("an exempt route (an upload) takes longer while its bytes keep coming", async () => {
  const { answer } = await trickle("/upload", ["a", "b", "c", "d", "e", "f", "g", "h"], 100);
  expect(answer).toMatch(/^HTTP\/1\.1 200/);
  expect(answer).toMatch(/\r\n\r\n8$/);
});
