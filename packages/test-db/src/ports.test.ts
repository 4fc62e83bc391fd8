import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { ephemeralRange, freePort } from "./ports.js";

function listenOn(port: number, host: string): Promise<() => Promise<void>> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen({ port, host }, () => resolve(() => new Promise((done) => server.close(() => done()))));
  });
}

describe("freePort", () => {
  it("reads the kernel's ephemeral range, and falls back to the IANA one when it cannot", () => {
    expect(ephemeralRange(() => "32768\t60999\n")).toEqual({ low: 32_768, high: 60_999 });
    expect(ephemeralRange(() => "garbage")).toEqual({ low: 49_152, high: 65_535 });
    expect(
      ephemeralRange(() => {
        throw new Error("ENOENT");
      }),
    ).toEqual({ low: 49_152, high: 65_535 });
  });

  it("picks below the ephemeral range, where no listen(0) or outgoing connection lands, a port a gateway can then bind on every address", async () => {
    const { low } = ephemeralRange();
    const port = await freePort();
    console.log(`freePort: ${port} (ephemeral range starts at ${low})`);
    expect(port).toBeGreaterThanOrEqual(10_000);
    expect(port).toBeLessThan(low);
    const close = await listenOn(port, "::").catch(() => listenOn(port, "0.0.0.0"));
    await close();
  });

  it("never hands out the same port twice in one process, even to callers racing in one Promise.all", async () => {
    const ports = await Promise.all(Array.from({ length: 64 }, () => freePort()));
    expect(new Set(ports).size).toBe(64);
    const later = await freePort();
    expect(ports).not.toContain(later);
  });
});
