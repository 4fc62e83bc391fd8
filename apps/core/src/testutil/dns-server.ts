import { createSocket, type Socket } from "node:dgram";
import { isIPv4, isIPv6 } from "node:net";

/**
 * A DNS server on 127.0.0.1 (UDP, port 0) for name-lookup tests: it answers A and AAAA questions from a table,
 * NXDOMAIN for names it does not know, or, with `silent`, swallows every query (a name whose DNS never
 * answers). It counts the queries it received.
 */
export interface TestDnsServer {
  /** `127.0.0.1:<port>`, for `Resolver.setServers`. */
  readonly address: string;
  readonly queries: number;
  close(): Promise<void>;
}

export async function startDnsServer(options: { table?: Record<string, string[]>; silent?: boolean } = {}): Promise<TestDnsServer> {
  const socket: Socket = createSocket("udp4");
  let queries = 0;
  socket.on("message", (query, peer) => {
    queries++;
    if (options.silent) return;
    const answer = answerOf(query, options.table ?? {});
    if (answer) socket.send(answer, peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    get queries() {
      return queries;
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

/** The answer to one query with one question (RFC 1035 section 4), or null for anything it cannot read. */
function answerOf(query: Buffer, table: Record<string, string[]>): Buffer | null {
  if (query.length < 12 || query.readUInt16BE(4) !== 1) return null;
  // The question: labels up to the zero byte, then type and class.
  let at = 12;
  const labels: string[] = [];
  while (at < query.length && query[at] !== 0) {
    const length = query[at]!;
    labels.push(query.subarray(at + 1, at + 1 + length).toString("latin1"));
    at += 1 + length;
  }
  const end = at + 5;
  if (end > query.length) return null;
  const type = query.readUInt16BE(at + 1);
  const name = labels.join(".").toLowerCase();
  const known = table[name];
  const wanted = type === 1 ? isIPv4 : type === 28 ? isIPv6 : () => false;
  const addresses = (known ?? []).filter((a) => wanted(a));
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0);
  // Response, recursion desired and available; NXDOMAIN (3) for an unknown name.
  header.writeUInt16BE(0x8180 | (known ? 0 : 3), 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(addresses.length, 6);
  const records = addresses.map((address) => {
    const data = type === 1 ? Buffer.from(address.split(".").map(Number)) : ipv6Bytes(address);
    const record = Buffer.alloc(12);
    // The name as a pointer to the question's (offset 12), type, class IN, ttl 60, data length.
    record.writeUInt16BE(0xc00c, 0);
    record.writeUInt16BE(type, 2);
    record.writeUInt16BE(1, 4);
    record.writeUInt32BE(60, 6);
    record.writeUInt16BE(data.length, 10);
    return Buffer.concat([record, data]);
  });
  return Buffer.concat([header, query.subarray(12, end), ...records]);
}

function ipv6Bytes(address: string): Buffer {
  const [head = "", tail = ""] = address.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === "" ? [] : tail.split(":");
  const groups = address.includes("::") ? [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right] : left;
  const bytes = Buffer.alloc(16);
  for (const [i, group] of groups.entries()) bytes.writeUInt16BE(Number.parseInt(group, 16), i * 2);
  return bytes;
}
