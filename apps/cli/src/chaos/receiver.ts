// The webhook receiver of `npm run chaos`: verifies every delivery with the Standard Webhooks library (the
// endpoint's secret, from the API's create answer), answers a share of them with a 500 so retries happen, and
// counts the 2xx answers by event id.
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { elapsedSeconds } from "./log.js";

export interface Received {
  /** Every request that reached the receiver. */
  requests: number;
  /** Requests whose signature did not verify (answered 400). */
  unverified: number;
  /** Verified requests answered with a 500 on purpose. */
  refused: number;
  /** Event id -> when each of its 2xx answers was given (seconds since the run began): how many, and the repeats' causes. */
  answered2xx: Map<string, number[]>;
}

export interface Receiver {
  /** The url to give the endpoint (plain HTTP on loopback: WEBHOOK_ALLOW_PRIVATE). */
  readonly url: string;
  readonly received: Received;
  /** The signing secret deliveries are verified with; until it is set, every delivery is unverified. */
  verifyWith(secret: string): void;
  close(): Promise<void>;
}

export async function startReceiver(options: { failureRate: number }): Promise<Receiver> {
  let verifier: Webhook | undefined;
  const received: Received = { requests: 0, unverified: 0, refused: 0, answered2xx: new Map() };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.requests++;
      let id: string;
      try {
        if (!verifier) throw new Error("no secret yet");
        id = (verifier.verify(Buffer.concat(chunks).toString("utf8"), request.headers as IncomingHttpHeaders & Record<string, string>) as { id: string }).id;
      } catch {
        received.unverified++;
        response.writeHead(400).end();
        return;
      }
      if (Math.random() < options.failureRate) {
        received.refused++;
        response.writeHead(500).end();
        return;
      }
      received.answered2xx.set(id, [...(received.answered2xx.get(id) ?? []), elapsedSeconds()]);
      response.end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    verifyWith(secret) {
      verifier = new Webhook(secret);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
