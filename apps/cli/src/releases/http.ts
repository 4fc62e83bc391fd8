// The public API over HTTPS with any key, for the release data maker and the packed-data test: one request, its
// status, headers and body as text (a file's bytes as a Buffer), trusting the gateway's development certificate.
import { readFileSync } from "node:fs";
import { Agent, request } from "node:https";
import { join } from "node:path";

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  bytes: Buffer;
}

export interface CallOptions {
  key?: string;
  form?: string;
  /** A raw body, with its content type. */
  raw?: { body: Buffer | string; type: string };
  idempotencyKey?: string;
}

export class Api {
  private readonly agent: Agent;

  /** `dataDir` holds the gateway's development certificate (`tls/cert.pem`). */
  constructor(
    dataDir: string,
    readonly port: number,
  ) {
    this.agent = new Agent({ ca: readFileSync(join(dataDir, "tls", "cert.pem")), keepAlive: true, maxSockets: 8 });
  }

  call(method: string, path: string, options: CallOptions = {}): Promise<Reply> {
    const body = options.raw?.body ?? options.form;
    const type = options.raw?.type ?? (options.form !== undefined ? "application/x-www-form-urlencoded" : undefined);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: "localhost",
          port: this.port,
          path,
          method,
          agent: this.agent,
          timeout: 60_000,
          headers: {
            ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
            ...(type ? { "content-type": type } : {}),
            ...(body !== undefined ? { "content-length": String(Buffer.byteLength(body)) } : {}),
            ...(options.idempotencyKey ? { "idempotency-key": options.idempotencyKey } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("error", reject);
          res.on("end", () => {
            const bytes = Buffer.concat(chunks);
            resolve({ status: res.statusCode!, headers: res.headers, body: bytes.toString("utf8"), bytes });
          });
        },
      );
      req.on("timeout", () => req.destroy(new Error(`${method} ${path}: timeout`)));
      req.on("error", reject);
      req.end(body);
    });
  }

  /** A request that must answer 2xx (retried while the stack answers 409 in use, 429 or 503); its body as JSON. */
  async ok<T = Record<string, unknown>>(method: string, path: string, options: CallOptions = {}): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const reply = await this.call(method, path, options);
      if (reply.status >= 200 && reply.status < 300) return JSON.parse(reply.body) as T;
      if ((reply.status === 409 || reply.status === 429 || reply.status === 503) && attempt < 50) {
        await new Promise((r) => setTimeout(r, 300));
        continue;
      }
      throw new Error(`${method} ${path}: ${reply.status} ${reply.body.slice(0, 400)}`);
    }
  }

  close(): void {
    this.agent.destroy();
  }
}

/** A `multipart/form-data` body of one uploaded file, as an SDK sends it. */
export function multipartFile(purpose: string, filename: string, type: string, content: string): { body: string; type: string } {
  const boundary = `----rms-release-data-${Math.random().toString(16).slice(2)}`;
  const body =
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n${purpose}\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n${content}\r\n--${boundary}--\r\n`;
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

/** Waits `ms`. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
