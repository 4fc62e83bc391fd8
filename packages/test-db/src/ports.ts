// Ports handed to another process (a mongod, a stack's gateway) that binds them a moment later.
//
// A port taken with `listen(0)` comes from the kernel's ephemeral range, the same range every other `listen(0)` and
// every outgoing connection on the machine draws from. Between the probe closing it and the other process binding
// it, a parallel test's server or a client socket can take it (CI saw `npm start`'s gateway refused with EADDRINUSE
// on the ports its test had just found free). Below that range the kernel hands out nothing on its own, so only
// another explicit picker could take the port, and they pick at random from thousands.
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** The lowest port picked: above the registered services most machines run (5432, 6379, 8080, 9090, ...). */
const LOWEST = 10_000;
/** Fewer candidates than this below the ephemeral range (a tuned machine): fall back to the kernel's choice. */
const MIN_CANDIDATES = 2_000;
/** Ports handed out by this process, never handed out again by it: two pickers in one Promise.all differ. */
const handedOut = new Set<number>();

/** The kernel's ephemeral port range (Linux), or the IANA one where it cannot be read. */
export function ephemeralRange(read: () => string = () => readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")): { low: number; high: number } {
  try {
    const [low, high] = read().trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low! > 0 && high! >= low!) return { low: low!, high: high! };
  } catch {
    // Not Linux: the IANA range, which macOS and Windows use.
  }
  return { low: 49_152, high: 65_535 };
}

/**
 * A TCP port free on every address (IPv4 and IPv6) a moment ago, from below the ephemeral range so that no
 * `listen(0)` or outgoing connection takes it before its process binds it; never one this process handed out before.
 */
export async function freePort(): Promise<number> {
  const { low } = ephemeralRange();
  if (low - LOWEST < MIN_CANDIDATES) return claim(await kernelPort());
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * (low - LOWEST));
    if (handedOut.has(port)) continue;
    // Reserved before the probe's await, so that a racing caller cannot pick it too; a taken one stays reserved.
    handedOut.add(port);
    if (await bindable(port)) return port;
  }
  return claim(await kernelPort());
}

function claim(port: number): number {
  handedOut.add(port);
  return port;
}

/** True when a listener can bind `port` on all addresses (dual stack; IPv4 alone on a machine without IPv6). */
async function bindable(port: number): Promise<boolean> {
  const outcome = await tryListen(port, "::");
  if (outcome === "unsupported") return (await tryListen(port, "0.0.0.0")) === "free";
  return outcome === "free";
}

function tryListen(port: number, host: string): Promise<"free" | "taken" | "unsupported"> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "EAFNOSUPPORT" || error.code === "EADDRNOTAVAIL" ? "unsupported" : "taken"));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve("free")));
  });
}

/** The kernel's own choice (from the ephemeral range), for machines with no room below it. */
function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
