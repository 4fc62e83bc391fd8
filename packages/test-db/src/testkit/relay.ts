import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";

export type TcpRelay = Awaited<ReturnType<typeof startTcpRelay>>;

/**
 * A TCP relay on 127.0.0.1 in front of a test database (or any TCP service):
 * it can be cut and restored at the same port, and can withhold replies, so a
 * test can make the database unreachable for one process without stopping the
 * server other tests share. `uri` is `mongoUri` re-pointed through the relay.
 */
export async function startTcpRelay(mongoUri: string) {
  const real = new URL(mongoUri);
  const target = { host: real.hostname.replace(/^\[|\]$/g, ""), port: Number(real.port || 27017) };
  const sockets = new Set<Socket>();
  /** Replies are withheld on every connection that sends a request containing this, while it is set. */
  let stallMarker: Buffer | undefined;
  /** Every reply reaches its client this much later than the server sent it (order kept). */
  let replyDelayMs = 0;
  /** Requests are held back on every connection that sends one containing this, while it is set. */
  let holdMarker: Buffer | undefined;
  /** The held connections' forwarding, each resumed by `releaseHeld`. */
  const held = new Set<() => void>();
  let server: Server | undefined;
  let port = 0;
  async function open(): Promise<void> {
    if (server?.listening) return;
    const listening = createServer((client) => {
      const upstream = connect(target.port, target.host);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on("close", () => sockets.delete(socket));
        socket.on("error", () => undefined);
      }
      let stalled = false;
      let holding: Buffer[] | undefined;
      client.on("data", (chunk: Buffer) => {
        if (stallMarker && chunk.includes(stallMarker)) stalled = true;
        if (!holding && holdMarker && chunk.includes(holdMarker)) {
          const queue: Buffer[] = [];
          holding = queue;
          held.add(function resume() {
            held.delete(resume);
            holding = undefined;
            for (const waiting of queue) upstream.write(waiting);
          });
        }
        if (holding) holding.push(chunk);
        else upstream.write(chunk);
      });
      // Replies held back by `delayReplies` are written in order, each when its time has come.
      let queue = Promise.resolve();
      let queued = 0;
      upstream.on("data", (chunk: Buffer) => {
        if (stalled) return;
        if (replyDelayMs === 0 && queued === 0) {
          client.write(chunk);
          return;
        }
        const due = Date.now() + replyDelayMs;
        queued++;
        queue = queue
          .then(() => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, due - Date.now()))))
          .then(() => {
            queued--;
            if (!client.destroyed) client.write(chunk);
          });
      });
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    server = listening;
    await new Promise<void>((resolve, reject) => {
      listening.once("error", reject);
      listening.listen(port, "127.0.0.1", resolve);
    });
    port = (listening.address() as AddressInfo).port;
  }
  async function close(): Promise<void> {
    for (const socket of sockets) socket.destroy();
    const listening = server;
    if (listening?.listening) await new Promise<void>((resolve) => listening.close(() => resolve()));
  }
  await open();
  const uri = new URL(real.href);
  uri.host = `127.0.0.1:${port}`;
  uri.searchParams.set("directConnection", "true");
  return {
    uri: uri.href,
    port,
    /** Refuses new connections and drops the open ones. */
    cut: close,
    /** Listens again at the same port (after `cut`). */
    restore: open,
    /**
     * From now on, a connection whose request contains `marker` (e.g. a command name)
     * still delivers that request, but its replies never come back: the write commits
     * and its caller cannot know. Undefined stops stalling new requests.
     */
    stallRepliesAfter(marker: string | undefined): void {
      stallMarker = marker === undefined ? undefined : Buffer.from(marker);
    },
    /**
     * From now on, a connection that sends a request containing `marker` (e.g. a collection's name) holds it and
     * every later request back, unsent, until `releaseHeld`: a database whose writes do not complete (nothing is
     * lost; they run once released). Undefined stops holding new requests.
     */
    holdRequestsWith(marker: string | undefined): void {
      holdMarker = marker === undefined ? undefined : Buffer.from(marker);
    },
    /** Sends what the held connections held back, in order, and forwards them again; answers how many were held. */
    releaseHeld(): number {
      const count = held.size;
      for (const resume of [...held]) resume();
      return count;
    },
    /** From now on every reply arrives `ms` later than the server sent it (a slow database); 0 stops delaying. */
    delayReplies(ms: number): void {
      replyDelayMs = ms;
    },
    close,
  };
}
