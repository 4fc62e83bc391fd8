import { describe, expect, it } from "vitest";
import { addressPolicy, classifyAddress, type BlockedRange, type Embedding } from "./address-policy.js";

// [address, range it must be blocked as, embedding it was found through]
const BLOCKED: ReadonlyArray<readonly [string, BlockedRange, Embedding?]> = [
  // IPv4, every range of CONTRACT.md section 7 (../shared/docs/), at both ends where the edge matters
  ["0.0.0.0", "unspecified"],
  ["0.255.255.255", "unspecified"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["10.0.0.1", "private"],
  ["10.255.255.255", "private"],
  ["172.16.0.1", "private"],
  ["172.31.255.255", "private"],
  ["192.168.0.1", "private"],
  ["192.168.255.255", "private"],
  ["169.254.0.1", "link_local"],
  ["169.254.255.255", "link_local"],
  ["100.64.0.1", "carrier_grade_nat"],
  ["100.127.255.255", "carrier_grade_nat"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.255", "multicast"],
  ["240.0.0.1", "reserved"],
  ["255.255.255.254", "reserved"],
  ["255.255.255.255", "broadcast"],
  ["192.0.0.8", "reserved"],
  ["192.88.99.1", "reserved"],
  ["198.18.0.1", "benchmarking"],
  ["198.19.255.255", "benchmarking"],
  ["192.0.2.1", "documentation"],
  ["198.51.100.7", "documentation"],
  ["203.0.113.200", "documentation"],
  ["169.254.169.254", "metadata"],
  ["169.254.170.2", "metadata"],
  ["100.100.100.200", "metadata"],
  ["168.63.129.16", "metadata"],
  // IPv6 ranges of its own
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["fc00::1", "unique_local"],
  ["fdff:ffff::1", "unique_local"],
  ["fd00:ec2::254", "metadata"],
  ["fe80::1", "link_local"],
  ["fe80::1%eth0", "link_local"],
  ["febf:ffff::1", "link_local"],
  ["fec0::1", "site_local"],
  ["feff::1", "site_local"],
  ["ff02::1", "multicast"],
  ["ff0e::1", "multicast"],
  ["2001:db8::1", "documentation"],
  ["3fff::1", "documentation"],
  ["2001:2::1", "benchmarking"],
  ["2001:10::1", "reserved"], // ORCHID, inside 2001::/23
  ["5f00::1", "reserved"], // SRv6
  ["100::1", "reserved"], // discard-only
  ["::a00:1", "reserved"], // IPv4-compatible (deprecated)
  ["4000::1", "reserved"], // outside global unicast
  ["64:ff9b:1::a00:1", "nat64_local"],
  ["64:ff9b:1::808:808", "nat64_local"],
  // IPv4 carried in IPv6: the embedded address decides
  ["::ffff:127.0.0.1", "loopback", "ipv4_mapped"],
  ["::ffff:7f00:1", "loopback", "ipv4_mapped"],
  ["::ffff:10.1.2.3", "private", "ipv4_mapped"],
  ["::ffff:169.254.169.254", "metadata", "ipv4_mapped"],
  ["::ffff:100.64.0.1", "carrier_grade_nat", "ipv4_mapped"],
  ["::ffff:0:192.168.1.1", "private", "ipv4_translated"],
  ["64:ff9b::7f00:1", "loopback", "nat64"],
  ["64:ff9b::10.0.0.1", "private", "nat64"],
  ["64:ff9b::a9fe:a9fe", "metadata", "nat64"],
  ["64:ff9b::c0a8:101", "private", "nat64"],
  ["2002:7f00:1::1", "loopback", "6to4"],
  ["2002:a00:1::", "private", "6to4"],
  ["2002:a9fe:a9fe::1", "metadata", "6to4"],
  ["2002:6440:1::1", "carrier_grade_nat", "6to4"],
  ["2001:0:7f00:1::1", "loopback", "teredo"], // server 127.0.0.1
  ["2001:0:808:808:0:ffff:f5ff:fffe", "private", "teredo"], // client ~f5ff:fffe = 10.0.0.1
];

const ALLOWED = [
  "8.8.8.8",
  "1.1.1.1",
  "93.184.216.34",
  "100.63.255.255", // just below CGNAT
  "100.128.0.0", // just above CGNAT
  "172.15.255.255",
  "172.32.0.0",
  "169.253.255.255",
  "198.17.255.255",
  "198.20.0.0",
  "223.255.255.255",
  "2606:4700:4700::1111",
  "2a00:1450:4001:830::200e",
  "::ffff:8.8.8.8",
  "64:ff9b::808:808",
  "2002:808:808::1",
  "2001:0:808:808:0:ffff:f7f7:f7f7", // Teredo: server 8.8.8.8, client 8.8.8.8
];

describe("classifyAddress", () => {
  it.each(BLOCKED.map(([address, range, via]) => ({ address, range, via })))("blocks $address as $range", ({ address, range, via }) => {
    expect(classifyAddress(address)).toEqual(via ? { allowed: false, range, via } : { allowed: false, range });
  });

  it.each(ALLOWED)("allows public %s", (address) => {
    expect(classifyAddress(address)).toEqual({ allowed: true });
  });

  it("refuses text that is not an address", () => {
    for (const text of ["", "example.com", "999.1.1.1", "1.2.3", "::g"]) {
      expect(classifyAddress(text), text).toEqual({ allowed: false, range: "invalid" });
    }
  });

  it("accepts bracketed IPv6 as written in URLs", () => {
    expect(classifyAddress("[::1]")).toEqual({ allowed: false, range: "loopback" });
  });

  it("covers every IPv4 range of the contract in both families (each range has a v4 and a v6 row)", () => {
    const v4 = new Set(BLOCKED.filter(([a]) => !a.includes(":")).map(([, r]) => r));
    const v6 = new Set(BLOCKED.filter(([a]) => a.includes(":")).map(([, r]) => r));
    for (const range of [
      "loopback",
      "private",
      "link_local",
      "carrier_grade_nat",
      "metadata",
      "unspecified",
      "multicast",
      "documentation",
      "benchmarking",
      "reserved",
    ]) {
      expect(v4.has(range as BlockedRange), `v4 ${range}`).toBe(true);
      expect(v6.has(range as BlockedRange), `v6 ${range}`).toBe(true);
    }
  });
});

describe("addressPolicy", () => {
  it("is the SSRF table unless private targets are allowed", () => {
    expect(addressPolicy({ allowPrivate: false })("127.0.0.1")).toEqual({ allowed: false, range: "loopback" });
    expect(addressPolicy({ allowPrivate: true })("127.0.0.1")).toEqual({ allowed: true });
    expect(addressPolicy({ allowPrivate: true })("169.254.169.254")).toEqual({ allowed: true });
  });
});
