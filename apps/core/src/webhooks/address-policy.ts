import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * The SSRF policy of CONTRACT.md section 7 (../shared/docs/): which addresses a webhook may be
 * delivered to. IPv4 is checked against a table of blocked ranges; IPv6 is
 * allowed only inside global unicast (2000::/3) minus its blocked ranges, and
 * the prefixes that carry an IPv4 address (IPv4-mapped, SIIT, NAT64, 6to4,
 * Teredo) are judged by the IPv4 address they embed.
 */
export type BlockedRange =
  | "unspecified"
  | "loopback"
  | "private"
  | "link_local"
  | "carrier_grade_nat"
  | "multicast"
  | "broadcast"
  | "reserved"
  | "benchmarking"
  | "documentation"
  | "unique_local"
  | "site_local"
  | "nat64_local"
  | "metadata"
  | "invalid";

/** How an IPv4 address was carried inside an IPv6 one, when it was. */
export type Embedding = "ipv4_mapped" | "ipv4_translated" | "nat64" | "6to4" | "teredo";

export type AddressVerdict = { readonly allowed: true } | { readonly allowed: false; readonly range: BlockedRange; readonly via?: Embedding };

/** Decides one IP address; the delivery code asks it for the address it connects to. */
export type AddressPolicy = (address: string) => AddressVerdict;

type Rule = readonly [cidr: string, range: BlockedRange];

// Most specific first: the first match names the range.
const IPV4_BLOCKED: readonly Rule[] = [
  ["169.254.169.254/32", "metadata"], // AWS, GCP, Azure, OpenStack, Oracle instance metadata
  ["169.254.170.2/32", "metadata"], // AWS ECS task metadata
  ["100.100.100.200/32", "metadata"], // Alibaba Cloud metadata
  ["168.63.129.16/32", "metadata"], // Azure wire server (a public address that answers only inside Azure)
  ["255.255.255.255/32", "broadcast"],
  ["0.0.0.0/8", "unspecified"],
  ["10.0.0.0/8", "private"],
  ["100.64.0.0/10", "carrier_grade_nat"],
  ["127.0.0.0/8", "loopback"],
  ["169.254.0.0/16", "link_local"],
  ["172.16.0.0/12", "private"],
  ["192.0.0.0/24", "reserved"], // IETF protocol assignments
  ["192.0.2.0/24", "documentation"],
  ["192.88.99.0/24", "reserved"], // former 6to4 relay anycast
  ["192.168.0.0/16", "private"],
  ["198.18.0.0/15", "benchmarking"],
  ["198.51.100.0/24", "documentation"],
  ["203.0.113.0/24", "documentation"],
  ["224.0.0.0/4", "multicast"],
  ["240.0.0.0/4", "reserved"],
];

const IPV6_BLOCKED: readonly Rule[] = [
  ["::/128", "unspecified"],
  ["::1/128", "loopback"],
  ["fd00:ec2::254/128", "metadata"], // AWS instance metadata over IPv6
  ["64:ff9b:1::/48", "nat64_local"], // RFC 8215 local-use NAT64: its embedding is site-defined, so nothing in it is judged safe
  ["fc00::/7", "unique_local"],
  ["fe80::/10", "link_local"],
  ["fec0::/10", "site_local"],
  ["ff00::/8", "multicast"],
  ["2001:db8::/32", "documentation"],
  ["3fff::/20", "documentation"],
  ["2001:2::/48", "benchmarking"],
];

/** Inside global unicast but not reachable on the internet (checked after the embeddings). */
const IPV6_BLOCKED_AFTER_EMBEDDINGS: readonly Rule[] = [
  ["2001::/23", "reserved"], // IETF protocol assignments (ORCHID, AMT, ...)
  ["5f00::/16", "reserved"], // SRv6 SIDs
];

const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR("2000::/3");

function compile<T extends ipaddr.IPv4 | ipaddr.IPv6>(rules: readonly Rule[], parse: (cidr: string) => [T, number]) {
  return rules.map(([cidr, range]) => ({ cidr: parse(cidr), range }));
}
const v4Rules = compile(IPV4_BLOCKED, (c) => ipaddr.IPv4.parseCIDR(c));
const v6Rules = compile(IPV6_BLOCKED, (c) => ipaddr.IPv6.parseCIDR(c));
const v6LateRules = compile(IPV6_BLOCKED_AFTER_EMBEDDINGS, (c) => ipaddr.IPv6.parseCIDR(c));

const ALLOWED: AddressVerdict = { allowed: true };

function classifyV4(address: ipaddr.IPv4): AddressVerdict {
  for (const rule of v4Rules) if (address.match(rule.cidr)) return { allowed: false, range: rule.range };
  return ALLOWED;
}

function v4FromParts(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

function viaEmbedded(embedded: readonly ipaddr.IPv4[], via: Embedding): AddressVerdict {
  for (const address of embedded) {
    const verdict = classifyV4(address);
    if (!verdict.allowed) return { allowed: false, range: verdict.range, via };
  }
  return ALLOWED;
}

const EMBEDDINGS: ReadonlyArray<{ cidr: [ipaddr.IPv6, number]; via: Embedding; extract: (p: number[]) => ipaddr.IPv4[] }> = [
  { cidr: ipaddr.IPv6.parseCIDR("::ffff:0:0/96"), via: "ipv4_mapped", extract: (p) => [v4FromParts(p[6]!, p[7]!)] },
  { cidr: ipaddr.IPv6.parseCIDR("::ffff:0:0:0/96"), via: "ipv4_translated", extract: (p) => [v4FromParts(p[6]!, p[7]!)] },
  { cidr: ipaddr.IPv6.parseCIDR("64:ff9b::/96"), via: "nat64", extract: (p) => [v4FromParts(p[6]!, p[7]!)] },
  { cidr: ipaddr.IPv6.parseCIDR("2002::/16"), via: "6to4", extract: (p) => [v4FromParts(p[1]!, p[2]!)] },
  // Teredo: the server's address in clear, the client's (its NAT's public address) bit-inverted.
  {
    cidr: ipaddr.IPv6.parseCIDR("2001::/32"),
    via: "teredo",
    extract: (p) => [v4FromParts(p[2]!, p[3]!), v4FromParts(~p[6]! & 0xffff, ~p[7]! & 0xffff)],
  },
];

function classifyV6(address: ipaddr.IPv6): AddressVerdict {
  for (const rule of v6Rules) if (address.match(rule.cidr)) return { allowed: false, range: rule.range };
  for (const embedding of EMBEDDINGS) {
    if (address.match(embedding.cidr)) return viaEmbedded(embedding.extract(address.parts), embedding.via);
  }
  for (const rule of v6LateRules) if (address.match(rule.cidr)) return { allowed: false, range: rule.range };
  // ::/96 (IPv4-compatible, deprecated), 100::/64 (discard) and every other unassigned space land here.
  if (!address.match(GLOBAL_UNICAST)) return { allowed: false, range: "reserved" };
  return ALLOWED;
}

/**
 * The verdict on one IP address (v4 or v6 text; an IPv6 zone id is ignored).
 * Text that is not an address in canonical form is refused as `invalid`, never allowed.
 */
export function classifyAddress(text: string): AddressVerdict {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  // Only canonical spellings: ipaddr.js would also read inet_aton forms such as "1.2.3".
  if (isIP(bare) === 0) return { allowed: false, range: "invalid" };
  const address = ipaddr.parse(bare);
  return address.kind() === "ipv4" ? classifyV4(address as ipaddr.IPv4) : classifyV6(address as ipaddr.IPv6);
}

/** The policy deliveries use: the SSRF table, or everything when the operator allows private targets (development, tests). */
export function addressPolicy(options: { allowPrivate: boolean }): AddressPolicy {
  return options.allowPrivate ? () => ALLOWED : classifyAddress;
}
