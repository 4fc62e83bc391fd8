import { request } from "node:http";
import { connect } from "node:net";

export interface RawResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
  readonly json: any;
}

/**
 * A plain-HTTP request with full control: repeated header lines (an array
 * value), any Authorization text, and the local address to come from
 * (127.0.0.2 is a peer other than 127.0.0.1 on the same machine).
 */
export function plainRequest(
  port: number,
  options: { method?: string; path: string; headers?: Record<string, string | string[]>; body?: string | Buffer; localAddress?: string },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, method: options.method ?? "GET", path: options.path, localAddress: options.localAddress, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json });
        });
        res.on("error", reject);
      },
    );
    for (const [name, value] of Object.entries(options.headers ?? {})) req.setHeader(name, value);
    // A server may answer before reading a large body and close: the answer still counts.
    req.on("error", reject);
    req.end(options.body);
  });
}

/** Bytes written as they are on a new connection; resolves with everything the server sent back. */
export function rawExchange(port: number, bytes: string | Buffer, localAddress?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, ...(localAddress ? { localAddress } : {}) });
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    socket.on("error", (error) => (chunks.length > 0 ? resolve(Buffer.concat(chunks).toString("utf8")) : reject(error)));
    socket.write(bytes);
  });
}
