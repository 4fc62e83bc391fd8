import { Resolver as CaresResolver } from "node:dns/promises";
import { readFileSync } from "node:fs";
import { isIP } from "node:net";

/** One address a name resolves to. */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** Turns a host name into its addresses; `nameLookup` in production, a table in tests (pinned-lookup.ts pins one). */
export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/**
 * Name lookups for delivery (CONTRACT.md section 7): asked of DNS through c-ares (`dns.promises.Resolver`),
 * which waits on a socket in the event loop, never on one of the 4 threads of the process's pool as
 * `dns.lookup` (getaddrinfo) does, and each within its own time limit, so a name whose DNS never answers
 * costs its own attempt 5 s and nothing else. What `dns.lookup` answered without DNS is kept: `localhost`
 * (and `*.localhost`, RFC 6761) is the loopback addresses, and a name in the hosts file is its addresses
 * there, as the C library's resolver would have it (containers name their neighbours that way); an IP
 * literal never gets here (pinned-lookup.ts checks it as it is).
 */

/** One lookup, A and AAAA together, ends within this long (CONTRACT.md section 7). */
export const NAME_LOOKUP_TIMEOUT_MS = 5_000;
/** c-ares' timeout of a first query (doubled for the second) and its tries per server: one server tried twice takes 4.5 s. */
const QUERY_TIMEOUT_MS = 1_500;
const QUERY_TRIES = 2;
/** The hosts file is read again at most this often (a read is a few KiB, synchronous, no pool thread). */
export const HOSTS_FILE_TTL_MS = 30_000;
/** A hosts file larger than this is not read (names then go to DNS). */
const HOSTS_FILE_MAX_BYTES = 1024 * 1024;
export const HOSTS_FILE = "/etc/hosts";

const LOOPBACK: readonly ResolvedAddress[] = [
  { address: "127.0.0.1", family: 4 },
  { address: "::1", family: 6 },
];

export interface NameLookupOptions {
  /** DNS servers (`host` or `host:port`); the system's (resolv.conf) when absent. */
  readonly servers?: readonly string[];
  readonly timeoutMs?: number;
  /** The hosts file; null: none. */
  readonly hostsFile?: string | null;
  readonly now?: () => number;
}

/**
 * The resolver delivery uses: `localhost`, then the hosts file, then DNS (A records first, then AAAA, each
 * in the server's order), within `timeoutMs`. A lookup past its limit is cancelled and fails with
 * `ETIMEOUT`; a name with no address fails with the resolver's code (`ENOTFOUND`, `ENODATA`).
 */
export function nameLookup(options: NameLookupOptions = {}): Resolver {
  const timeoutMs = options.timeoutMs ?? NAME_LOOKUP_TIMEOUT_MS;
  const hosts = options.hostsFile === null ? null : hostsFileReader(options.hostsFile ?? HOSTS_FILE, options.now ?? Date.now);
  return async (hostname) => {
    const name = hostname.toLowerCase().replace(/\.$/, "");
    if (name === "localhost" || name.endsWith(".localhost")) return LOOPBACK;
    const listed = hosts?.()?.get(name);
    if (listed && listed.length > 0) return listed;
    return askDns(name, options.servers, timeoutMs);
  };
}

/** A and AAAA of `name` from DNS on a resolver of its own, cancelled at `timeoutMs`. */
async function askDns(name: string, servers: readonly string[] | undefined, timeoutMs: number): Promise<readonly ResolvedAddress[]> {
  const resolver = new CaresResolver({ timeout: QUERY_TIMEOUT_MS, tries: QUERY_TRIES });
  if (servers) resolver.setServers([...servers]);
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), timeoutMs);
  });
  const both = Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
  try {
    const answered = await Promise.race([both, limit]);
    if (answered === "late") throw lookupError("ETIMEOUT", `no answer for ${name} within ${timeoutMs} ms`);
    const [v4, v6] = answered;
    const addresses: ResolvedAddress[] = [
      ...(v4.status === "fulfilled" ? v4.value.map((address) => ({ address, family: 4 as const })) : []),
      ...(v6.status === "fulfilled" ? v6.value.map((address) => ({ address, family: 6 as const })) : []),
    ];
    if (addresses.length > 0) return addresses;
    const reason = [v4, v6].find((r): r is PromiseRejectedResult => r.status === "rejected")?.reason as NodeJS.ErrnoException | undefined;
    throw lookupError(reason?.code ?? "ENODATA", `no address for ${name}`);
  } finally {
    clearTimeout(timer);
    // Whatever is still asked goes: its sockets close and its promises reject (ECANCELLED), unheard.
    resolver.cancel();
  }
}

function lookupError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

/** name -> addresses, from hosts-file text: `address name [aliases...]`, `#` comments, names lower-cased, first lines first. */
export function parseHostsFile(text: string): Map<string, ResolvedAddress[]> {
  const table = new Map<string, ResolvedAddress[]>();
  for (const line of text.split(/\r?\n/)) {
    const [address, ...names] = line.replace(/#.*/, "").trim().split(/\s+/);
    // A zone index (fe80::1%eth0) is a link-local address: the policy would refuse it anyway.
    const family = address ? isIP(address) : 0;
    if (family === 0) continue;
    for (const raw of names) {
      const name = raw.toLowerCase().replace(/\.$/, "");
      const list = table.get(name) ?? [];
      if (!list.some((a) => a.address === address)) list.push({ address: address!, family: family === 6 ? 6 : 4 });
      table.set(name, list);
    }
  }
  return table;
}

/** The hosts file's table, read again at most every HOSTS_FILE_TTL_MS; a missing, unreadable or oversized file is no table. */
function hostsFileReader(path: string, now: () => number): () => Map<string, ResolvedAddress[]> | null {
  let readAt = Number.NEGATIVE_INFINITY;
  let table: Map<string, ResolvedAddress[]> | null = null;
  return () => {
    if (now() - readAt < HOSTS_FILE_TTL_MS) return table;
    readAt = now();
    try {
      const bytes = readFileSync(path);
      table = bytes.length > HOSTS_FILE_MAX_BYTES ? null : parseHostsFile(bytes.toString("utf8"));
    } catch {
      table = null;
    }
    return table;
  };
}
