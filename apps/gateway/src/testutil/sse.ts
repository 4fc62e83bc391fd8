import { request } from "node:https";
import type { IncomingMessage } from "node:http";

/** One Server-Sent Event as received. */
export interface SseEvent {
  readonly id: string;
  readonly event: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON; each assertion states the shape it expects.
  readonly data: any;
}

/** A stream as a test client holds it: what came so far, and how it ended. */
export interface SseStream {
  readonly status: number;
  readonly headers: IncomingMessage["headers"];
  /** The body of an answer that was not a stream (an error), parsed. */
  // biome-ignore lint/suspicious/noExplicitAny: an error envelope.
  readonly error: any;
  readonly events: SseEvent[];
  /** Comment lines received (`: keep-alive`). */
  comments: number;
  /** Resolves when the connection ends: `end` when the server ended the answer, `cut` when the connection broke. */
  readonly ended: Promise<"end" | "cut">;
  /** Stops reading the socket (a stalled reader): the server's writes pile up. */
  stall(): void;
  close(): void;
}

/**
 * Opens `path` on the gateway at `port` as an SSE client would (HTTPS, trusting `ca`), with `Last-Event-ID` when
 * given; resolves once the answer's head has come (and, for an error, its body).
 */
export function openSse(port: number, ca: string, path: string, options: { key: string; lastEventId?: string } = { key: "" }): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: "GET",
        ca,
        agent: false,
        headers: {
          authorization: `Bearer ${options.key}`,
          accept: "text/event-stream",
          ...(options.lastEventId ? { "last-event-id": options.lastEventId } : {}),
        },
      },
      (res) => {
        const events: SseEvent[] = [];
        let endedAs: (how: "end" | "cut") => void = () => {};
        const ended = new Promise<"end" | "cut">((r) => (endedAs = r));
        const stream: SseStream = {
          status: res.statusCode ?? 0,
          headers: res.headers,
          error: undefined,
          events,
          comments: 0,
          ended,
          stall: () => {
            res.pause();
            res.socket.pause();
          },
          close: () => req.destroy(),
        };
        let buffer = "";
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          if (stream.status !== 200) {
            body += chunk;
            return;
          }
          buffer += chunk;
          for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const fields = new Map<string, string>();
            for (const line of block.split("\n")) {
              if (line.startsWith(":")) {
                stream.comments++;
                continue;
              }
              const colon = line.indexOf(":");
              fields.set(line.slice(0, colon), line.slice(colon + 1).replace(/^ /, ""));
            }
            if (fields.has("data")) events.push({ id: fields.get("id") ?? "", event: fields.get("event") ?? "message", data: JSON.parse(fields.get("data")!) });
          }
        });
        res.on("end", () => endedAs("end"));
        res.on("error", () => endedAs("cut"));
        res.on("aborted", () => endedAs("cut"));
        res.on("close", () => endedAs(res.complete ? "end" : "cut"));
        if (stream.status === 200) resolve(stream);
        else res.on("end", () => resolve(Object.assign(stream, { error: body ? JSON.parse(body).error : undefined })));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** A client that reconnects with `Last-Event-ID` whenever its stream ends, as the SDK's streams do: every event once. */
export interface FollowedSse {
  readonly events: SseEvent[];
  /** Connections made (1 + reconnections). */
  connections: number;
  close(): void;
}

export function followSse(port: number, ca: string, path: string, options: { key: string; lastEventId?: string }): FollowedSse {
  const events: SseEvent[] = [];
  let current: SseStream | undefined;
  let closed = false;
  const followed: FollowedSse = {
    events,
    connections: 0,
    close: () => {
      closed = true;
      current?.close();
    },
  };
  const connect = async (lastEventId: string | undefined): Promise<void> => {
    while (!closed) {
      const stream = await openSse(port, ca, path, { key: options.key, ...(lastEventId ? { lastEventId } : {}) }).catch(() => undefined);
      if (stream?.status !== 200) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        continue;
      }
      current = stream;
      followed.connections++;
      // The stream's own list, read into ours as it grows.
      const seen = stream.events;
      const copy = () => {
        while (seen.length > 0) events.push(seen.shift()!);
      };
      const timer = setInterval(copy, 20);
      await stream.ended;
      clearInterval(timer);
      copy();
      lastEventId = events.at(-1)?.id ?? lastEventId;
    }
  };
  void connect(options.lastEventId);
  return followed;
}
