import { pbkdf2 } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDnsServer, type TestDnsServer } from "../testutil/dns-server.js";
import { NAME_LOOKUP_TIMEOUT_MS, nameLookup, parseHostsFile } from "./name-lookup.js";

let dns: TestDnsServer;
let silent: TestDnsServer;
const dir = mkdtempSync(join(tmpdir(), "rms-hosts-"));
beforeAll(async () => {
  dns = await startDnsServer({ table: { "hooks.test": ["192.0.2.10", "192.0.2.11", "2001:db8::1"], "v6only.test": ["2001:db8::2"] } });
  silent = await startDnsServer({ silent: true });
});
afterAll(async () => {
  await dns?.close();
  await silent?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("nameLookup", () => {
  it("asks DNS for A and AAAA and answers the IPv4 addresses first, each in the server's order", async () => {
    const lookup = nameLookup({ servers: [dns.address], hostsFile: null });
    expect(await lookup("hooks.test")).toEqual([
      { address: "192.0.2.10", family: 4 },
      { address: "192.0.2.11", family: 4 },
      { address: "2001:db8::1", family: 6 },
    ]);
    expect(await lookup("V6ONLY.test.")).toEqual([{ address: "2001:db8::2", family: 6 }]);
    await expect(lookup("unknown.test")).rejects.toMatchObject({ code: "ENOTFOUND" });
  });

  it("answers localhost (and *.localhost) with the loopback addresses without asking DNS, as dns.lookup did", async () => {
    const before = silent.queries;
    const lookup = nameLookup({ servers: [silent.address], hostsFile: null });
    const loopback = [
      { address: "127.0.0.1", family: 4 },
      { address: "::1", family: 6 },
    ];
    expect(await lookup("localhost")).toEqual(loopback);
    expect(await lookup("hooks.localhost")).toEqual(loopback);
    expect(silent.queries).toBe(before);
  });

  it("answers a name of the hosts file from it (first lines first), and asks DNS for the others", async () => {
    const hostsFile = join(dir, "hosts");
    writeFileSync(hostsFile, "# comment\n127.0.0.1 localhost\n10.1.2.3   box.internal box  # the box\n10.1.2.4 box\nnot-an-address other\n::1 ip6-localhost\n");
    const lookup = nameLookup({ servers: [dns.address], hostsFile });
    const before = dns.queries;
    expect(await lookup("box")).toEqual([
      { address: "10.1.2.3", family: 4 },
      { address: "10.1.2.4", family: 4 },
    ]);
    expect(await lookup("BOX.internal")).toEqual([{ address: "10.1.2.3", family: 4 }]);
    expect(dns.queries).toBe(before);
    expect(await lookup("hooks.test")).toHaveLength(3);
    expect(dns.queries).toBeGreaterThan(before);
    await expect(nameLookup({ servers: [dns.address], hostsFile })("other")).rejects.toMatchObject({ code: "ENOTFOUND" });
  });

  it(`a name whose DNS never answers fails with ETIMEOUT within the ${NAME_LOOKUP_TIMEOUT_MS / 1000} s limit`, { timeout: 30_000 }, async () => {
    const lookup = nameLookup({ servers: [silent.address], hostsFile: null });
    const started = performance.now();
    await expect(lookup("never.test")).rejects.toMatchObject({ code: "ETIMEOUT" });
    const tookMs = performance.now() - started;
    console.log(`name lookup against a DNS server that never answers failed after ${Math.round(tookMs)} ms (limit ${NAME_LOOKUP_TIMEOUT_MS} ms)`);
    expect(silent.queries).toBeGreaterThan(0);
    // The limit, with a generous margin for a loaded machine's timers.
    expect(tookMs).toBeLessThan(NAME_LOOKUP_TIMEOUT_MS + 3_000);
  });

  it("hanging lookups occupy no thread of the process's pool: work that needs the pool runs meanwhile", { timeout: 30_000 }, async () => {
    const lookup = nameLookup({ servers: [silent.address], hostsFile: null });
    let settled = 0;
    // Twice the pool's 4 threads: with dns.lookup (getaddrinfo), each would hold a thread until it gave up.
    const hanging = Array.from({ length: 8 }, (_, i) =>
      lookup(`hang-${i}.test`).then(
        () => settled++,
        () => settled++,
      ),
    );
    const pooled = Array.from({ length: 4 }, (_, i) => promisify(pbkdf2)("secret", `salt-${i}`, 1_000, 32, "sha256"));
    await Promise.all(pooled);
    expect(settled).toBe(0);
    await Promise.all(hanging);
    expect(settled).toBe(8);
  });
});

describe("parseHostsFile", () => {
  it("reads address and names per line, lower-cases names, skips comments and lines without an address", () => {
    const table = parseHostsFile("  # nothing\n192.0.2.1 A.example a\n\n192.0.2.1 a\nbad line\nfe80::1 link\n2001:db8::5\tsix # v6\n");
    expect(Object.fromEntries(table)).toEqual({
      "a.example": [{ address: "192.0.2.1", family: 4 }],
      a: [{ address: "192.0.2.1", family: 4 }],
      link: [{ address: "fe80::1", family: 6 }],
      six: [{ address: "2001:db8::5", family: 6 }],
    });
  });
});
