import type { LookupFunction } from "node:net";
import { isIP } from "node:net";
import type { AddressPolicy, BlockedRange, Embedding } from "./address-policy.js";
import { nameLookup, type ResolvedAddress, type Resolver } from "./name-lookup.js";

export type { ResolvedAddress, Resolver };

/** Delivery's resolver: c-ares with a 5 s limit per lookup, localhost and the hosts file (name-lookup.ts). */
export const systemResolver: Resolver = nameLookup();

export type Pin =
  | { readonly ok: true; readonly addresses: readonly ResolvedAddress[] }
  | { readonly ok: false; readonly error: "blocked_address"; readonly address: string; readonly range: BlockedRange; readonly via?: Embedding }
  | { readonly ok: false; readonly error: "dns_failed"; readonly detail: string };

/**
 * Resolves a host once and checks every address it has: one blocked address refuses the host (a name that
 * mixes public and private addresses is not delivered to); otherwise the addresses, in the resolver's order,
 * are the only ones a connection may go to (tried in that order until one connects, deliver.ts). A literal
 * address is checked without any lookup.
 */
export async function resolveAndPin(host: string, policy: AddressPolicy, resolve: Resolver): Promise<Pin> {
  let addresses: readonly ResolvedAddress[];
  const family = isIP(host);
  if (family !== 0) {
    addresses = [{ address: host, family: family === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await resolve(host);
    } catch (error) {
      return { ok: false, error: "dns_failed", detail: (error as NodeJS.ErrnoException).code ?? "lookup failed" };
    }
  }
  if (addresses.length === 0) return { ok: false, error: "dns_failed", detail: "no addresses" };
  for (const { address } of addresses) {
    const verdict = policy(address);
    if (!verdict.allowed) return { ok: false, error: "blocked_address", address, range: verdict.range, ...(verdict.via ? { via: verdict.via } : {}) };
  }
  return { ok: true, addresses };
}

/**
 * A `lookup` for node:net/tls that answers with the pinned address and never
 * asks DNS, so the socket connects to exactly the address that was checked.
 * Asked about any other name, it fails rather than resolve.
 */
export function lookupPinnedTo(host: string, pin: ResolvedAddress): LookupFunction {
  return (hostname, options, callback) => {
    if (hostname !== host) {
      const error: NodeJS.ErrnoException = new Error(`refusing to resolve ${hostname}: the connection is pinned to ${host}`);
      error.code = "ENOTFOUND";
      callback(error, "", 0);
      return;
    }
    if (options.all) callback(null, [{ address: pin.address, family: pin.family }]);
    else callback(null, pin.address, pin.family);
  };
}
