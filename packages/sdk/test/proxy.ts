// Test-only: an HTTPS proxy in front of the gateway that breaks exchanges on purpose, as a network or a proxy would:
// it loses an answer the gateway gave (the connection closes after the gateway answered), cuts an answer's body
// halfway, or answers in the gateway's place (a 429 with Retry-After, a 503 that says not to retry). It terminates
// TLS with the stack's own certificate, so the SDK trusts it as it trusts the gateway, and records every request.
import { createServer, request as httpsRequest, type Server } from "node:https";
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What the proxy does with a request a rule matches. */
export type Fault =
  | { kind: "pass" }
  | { kind: "lose-answer" }
  | { kind: "cut-body-half" }
  | { kind: "answer"; status: number; headers: Record<string, string>; body: unknown };

export interface Rule {
  readonly method: string;
  /** Matches the path (without the query). */
  readonly path: RegExp;
  readonly fault: Fault;
  /** How many matching requests it applies to (then they pass). */
  times: number;
}

export interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** When it arrived (ms since the epoch). */
  readonly at: number;
  /** What the proxy did: passed it on, or the fault it applied. */
  readonly did: Fault["kind"];
  /** The gateway's status, once known (passed or lost answers). */
  status?: number;
  replayed?: boolean;
}

const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade", "host"]);

function forwardable(headers: IncomingMessage["headers"]): OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));
}

export class FaultyProxy {
  readonly seen: Seen[] = [];
  private rules: Rule[] = [];
  private server: Server | undefined;

  constructor(
    private readonly upstream: { host: string; port: number; ca: string },
    private readonly tls: { cert: string; key: string },
  ) {}

  /** Replaces the rules (and forgets what was seen). */
  set(rules: Rule[]): void {
    this.rules = rules;
    this.seen.length = 0;
  }

  async listen(): Promise<number> {
    this.server = createServer({ cert: this.tls.cert, key: this.tls.key }, (req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? "/").split("?")[0]!;
    const rule = this.rules.find((r) => r.times > 0 && r.method === req.method && r.path.test(path));
    if (rule) rule.times--;
    const fault = rule?.fault;
    const seen: Seen = { method: req.method ?? "", url: req.url ?? "", headers: { ...req.headers }, at: Date.now(), did: fault?.kind ?? "pass" };
    this.seen.push(seen);
    if (fault?.kind === "answer") {
      req.resume();
      res.writeHead(fault.status, { "Content-Type": "application/json; charset=utf-8", ...fault.headers }).end(JSON.stringify(fault.body));
      return;
    }
    const upstream = httpsRequest(
      {
        host: this.upstream.host,
        port: this.upstream.port,
        method: req.method,
        path: req.url,
        headers: forwardable(req.headers),
        ca: this.upstream.ca,
        agent: false,
      },
      (answer) => {
        seen.status = answer.statusCode;
        seen.replayed = answer.headers["idempotent-replayed"] === "true";
        if (fault?.kind === "lose-answer") {
          // The gateway answered (its work is done); the client never hears of it.
          answer.resume();
          answer.once("end", () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, forwardable(answer.headers));
        if (fault?.kind === "cut-body-half") {
          const half = Number(answer.headers["content-length"] ?? 0) / 2;
          let sent = 0;
          answer.on("data", (chunk: Buffer) => {
            if (sent >= half) return;
            sent += chunk.length;
            res.write(chunk);
            if (sent >= half) {
              answer.destroy();
              res.socket?.destroy();
            }
          });
          return;
        }
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.socket?.destroy());
    req.pipe(upstream);
  }
}
