import { connect, createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { inject } from "vitest";
import type {} from "@rms/test-db/vitest-setup";

/**
 * A TCP relay to the test database that can be cut and restored at the same
 * port; `uri` is the test database's connection string through it.
 */
export async function databaseRelay() {
  const real = new URL(inject("mongoUri"));
  const target = { host: real.hostname.replace(/^\[|\]$/g, ""), port: Number(real.port || 27017) };
  const sockets = new Set<Socket>();
  /** Replies are withheld on every connection that sends a request containing this, while it is set. */
  let stallMarker: Buffer | undefined;
  let server: Server | undefined;
  let port = 0;
  async function open() {
    server = createServer((client) => {
      const upstream = connect(target.port, target.host);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on("close", () => sockets.delete(s));
        s.on("error", () => undefined);
      }
      let stalled = false;
      client.on("data", (chunk: Buffer) => {
        if (stallMarker && chunk.includes(stallMarker)) stalled = true;
        upstream.write(chunk);
      });
      upstream.on("data", (chunk: Buffer) => {
        if (!stalled) client.write(chunk);
      });
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve) => server!.listen(port, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  }
  await open();
  const uri = new URL(real.href);
  uri.host = `127.0.0.1:${port}`;
  uri.searchParams.set("directConnection", "true");
  return {
    uri: uri.href,
    /** Refuses new connections and drops the open ones. */
    async cut() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
    },
    restore: open,
    /**
     * From now on, a connection whose request contains `marker` (e.g. a command name)
     * still delivers that request to the database, but its replies never come back:
     * the write commits and its caller cannot know. Undefined stops stalling new requests.
     */
    stallRepliesAfter(marker: string | undefined) {
      stallMarker = marker === undefined ? undefined : Buffer.from(marker);
    },
    async close() {
      for (const s of sockets) s.destroy();
      if (server?.listening) await new Promise<void>((resolve) => server!.close(() => resolve()));
    },
  };
}
