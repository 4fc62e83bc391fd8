import type { LookupAddress } from "node:dns";
import { describe, expect, it } from "vitest";
import { addressPolicy } from "./address-policy.js";
import { lookupPinnedTo, resolveAndPin, systemResolver, type Resolver } from "./pinned-lookup.js";

const strict = addressPolicy({ allowPrivate: false });
const table =
  (addresses: string[]): Resolver =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

describe("resolveAndPin", () => {
  it("pins every address, in the resolver's order, when every address is allowed", async () => {
    expect(await resolveAndPin("hooks.test", strict, table(["8.8.8.8", "2606:4700:4700::1111"]))).toEqual({
      ok: true,
      addresses: [
        { address: "8.8.8.8", family: 4 },
        { address: "2606:4700:4700::1111", family: 6 },
      ],
    });
  });

  it("refuses the name when any address is blocked, naming it", async () => {
    expect(await resolveAndPin("hooks.test", strict, table(["8.8.8.8", "::ffff:10.0.0.1"]))).toEqual({
      ok: false,
      error: "blocked_address",
      address: "::ffff:10.0.0.1",
      range: "private",
      via: "ipv4_mapped",
    });
  });

  it("checks a literal address without asking the resolver", async () => {
    let asked = 0;
    const counting: Resolver = async () => {
      asked++;
      return [];
    };
    expect(await resolveAndPin("169.254.169.254", strict, counting)).toMatchObject({ ok: false, error: "blocked_address", range: "metadata" });
    expect(await resolveAndPin("2606:4700:4700::1111", strict, counting)).toEqual({ ok: true, addresses: [{ address: "2606:4700:4700::1111", family: 6 }] });
    expect(asked).toBe(0);
  });

  it("turns resolver failures and empty answers into dns_failed", async () => {
    const failing: Resolver = async () => {
      throw Object.assign(new Error("nope"), { code: "EAI_AGAIN" });
    };
    expect(await resolveAndPin("hooks.test", strict, failing)).toEqual({ ok: false, error: "dns_failed", detail: "EAI_AGAIN" });
    expect(await resolveAndPin("hooks.test", strict, table([]))).toEqual({ ok: false, error: "dns_failed", detail: "no addresses" });
  });

  it("the system resolver answers for localhost (and the policy then blocks it)", async () => {
    const pin = await resolveAndPin("localhost", strict, systemResolver);
    expect(pin).toMatchObject({ ok: false, error: "blocked_address", range: "loopback" });
  });
});

describe("lookupPinnedTo", () => {
  const lookup = lookupPinnedTo("hooks.test", { address: "127.0.0.1", family: 4 });

  it("answers the pinned address in both callback forms node uses", async () => {
    const single = await new Promise((resolve) => lookup("hooks.test", {}, (error, address, family) => resolve({ error, address, family })));
    expect(single).toEqual({ error: null, address: "127.0.0.1", family: 4 });
    const all = await new Promise<LookupAddress[] | string>((resolve) => lookup("hooks.test", { all: true }, (_error, addresses) => resolve(addresses)));
    expect(all).toEqual([{ address: "127.0.0.1", family: 4 }]);
  });

  it("refuses to resolve any other name", async () => {
    const error = await new Promise((resolve) => lookup("other.test", {}, (err) => resolve(err)));
    expect(error).toMatchObject({ code: "ENOTFOUND" });
  });
});
