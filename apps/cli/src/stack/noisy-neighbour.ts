// The noisy neighbour of webhook delivery (CONTRACT.md section 7, "Fair delivery"), as the end-to-end test, `npm run
// chaos` and `npm run bench` make it through the public API: a receiver that accepts connections and never answers,
// one account's endpoints pointed at it with an import fanned out to them (the backlog), and a well-behaved account's
// creates timed from each event's creation to its arrival at a receiver of its own.
import { createServer as createHttpServer } from "node:http";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { idTimeMs } from "@rms/core/ids";
import type { JobRef, PublicApi } from "./public-api.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A receiver that accepts every connection on 127.0.0.1 and never answers: each attempt to it runs into the 15 s timeout. */
export interface SilentServer {
  url(path: string): string;
  /** Connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startSilentServer(): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    // Read and drop what comes, so the sender's writes never block; answer nothing.
    socket.on("data", () => {});
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A receiver answering 200 at once, noting when each event first arrived and, for `resource.created`, which resource it was. */
export interface ArrivalReceiver {
  url(path: string): string;
  /** Event id -> first arrival (ms since the epoch). */
  readonly arrivedAt: ReadonlyMap<string, number>;
  /** Resource id -> its `resource.created` event's id. */
  readonly createdEvent: ReadonlyMap<string, string>;
  close(): Promise<void>;
}

export async function startArrivalReceiver(): Promise<ArrivalReceiver> {
  const arrivedAt = new Map<string, number>();
  const createdEvent = new Map<string, string>();
  const server = createHttpServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const at = Date.now();
      try {
        const event = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { id: string; type: string; data: { object: { id: string } } };
        if (!arrivedAt.has(event.id)) arrivedAt.set(event.id, at);
        if (event.type === "resource.created") createdEvent.set(event.data.object.id, event.id);
      } catch {
        // not an event: answered all the same
      }
      response.end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    arrivedAt,
    createdEvent,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** How long after its event an event arrived: its arrival less the creation time its id carries (ms). */
export function eventLagMs(eventId: string, arrivedAtMs: number): number {
  return arrivedAtMs - idTimeMs(eventId);
}

/** An account's endpoints pointed at `url(i)`, taking every event; answers their ids. */
export async function addEndpoints(api: PublicApi, count: number, url: (i: number) => string, tag: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const created = await api.send<{ id: string }>("POST", "/v1/webhook_endpoints", {
      form: `url=${encodeURIComponent(url(i))}&enabled_events[]=*`,
      idempotencyKey: `${tag}-endpoint-${i}`,
    });
    ids.push(created.id);
  }
  return ids;
}

/**
 * The noisy account's backlog: `endpoints` endpoints at the silent server, then an import of `items` resources,
 * each of whose `resource.created` events is fanned out to every endpoint (items x endpoints deliveries that
 * time out one after the other). Answers the endpoints and the import job.
 */
export async function queueDeadBacklog(
  api: PublicApi,
  dead: SilentServer,
  options: { endpoints: number; items: number; tag: string },
): Promise<{ endpoints: string[]; job: JobRef }> {
  const endpoints = await addEndpoints(api, options.endpoints, (i) => dead.url(`/dead-${i}`), options.tag);
  const job = await api.send<JobRef>(
    "POST",
    "/v1/jobs",
    {
      json: { type: "resources.import", params: { items: Array.from({ length: options.items }, (_, i) => ({ name: `${options.tag}-${i}` })) } },
      idempotencyKey: `${options.tag}-import`,
    },
    300_000,
  );
  return { endpoints, job };
}

/**
 * A well-behaved account's deliveries timed: `count` creates one after the other, `everyMs` apart, each followed
 * until its `resource.created` arrived at `receiver` (at most `timeoutMs`). Answers each one's lag from its
 * event's creation to its arrival (ms), in order; a create whose delivery did not come in time counts as
 * `timeoutMs`.
 */
export async function timedDeliveries(
  api: PublicApi,
  receiver: ArrivalReceiver,
  options: { count: number; everyMs: number; timeoutMs: number; tag: string },
): Promise<number[]> {
  const lags: number[] = [];
  for (let i = 0; i < options.count; i++) {
    const { id } = await api.send<{ id: string }>("POST", "/v1/resources", { form: `name=${options.tag}-${i}`, idempotencyKey: `${options.tag}-${i}` });
    const deadline = Date.now() + options.timeoutMs;
    let lag = options.timeoutMs;
    while (Date.now() < deadline) {
      const event = receiver.createdEvent.get(id);
      const at = event === undefined ? undefined : receiver.arrivedAt.get(event);
      if (event !== undefined && at !== undefined) {
        lag = eventLagMs(event, at);
        break;
      }
      await sleep(10);
    }
    lags.push(lag);
    await sleep(options.everyMs);
  }
  return lags;
}

/** The `q` quantile (0..1) of `values` (nearest rank). */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}
