import { openAsBlob } from "node:fs";
import { Agent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { Readable } from "node:stream";
import { rootCertificates } from "node:tls";
import { SDK_VERSION } from "../gen/version.js";
import type { Platform } from "../platform.js";
import { fetchTransport, type RequestBody, type Transport } from "../transport.js";

/**
 * Node's platform: requests over `node:https` with a keep-alive agent that trusts the system's roots and the
 * client's `ca` (Node's fetch cannot take a CA without a dependency), bodies streamed with their bytes counted,
 * and paths opened as Blobs that read from disk.
 */

/** The answer's body as a web stream, paused while its reader is behind; cut (an error) when it ends short. */
function webBody(message: IncomingMessage): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      message.on("data", (chunk: Buffer) => {
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 0) <= 0) message.pause();
      });
      message.on("end", () => controller.close());
      message.on("error", (error) => controller.error(error));
      message.on("close", () => {
        if (!message.complete) controller.error(new Error("the connection closed before the answer ended"));
      });
    },
    pull() {
      message.resume();
    },
    cancel() {
      message.destroy();
    },
  });
}

function headersOf(message: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(message.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return headers;
}

/** The body as a Node stream, counting the bytes as they are handed to the socket. */
function nodeBody(body: RequestBody, onProgress: ((sent: number) => void) | undefined): { stream: Readable; length: number | undefined } {
  const source =
    typeof body === "string" || body instanceof Uint8Array
      ? Readable.from([typeof body === "string" ? Buffer.from(body) : body])
      : Readable.fromWeb((body instanceof Blob ? body.stream() : body) as import("node:stream/web").ReadableStream<Uint8Array>);
  const length =
    typeof body === "string" ? Buffer.byteLength(body) : body instanceof Uint8Array ? body.byteLength : body instanceof Blob ? body.size : undefined;
  if (!onProgress) return { stream: source, length };
  let sent = 0;
  source.on("data", (chunk: Buffer) => {
    sent += chunk.length;
    onProgress(sent);
  });
  return { stream: source, length };
}

function httpsTransport(ca: string | Uint8Array | undefined): Transport {
  const tls = new HttpsAgent({ keepAlive: true, ...(ca !== undefined ? { ca: [...rootCertificates, typeof ca === "string" ? ca : Buffer.from(ca)] } : {}) });
  const plain = new Agent({ keepAlive: true });
  return (request) =>
    new Promise((resolve, reject) => {
      const url = new URL(request.url);
      const secure = url.protocol === "https:";
      const body = request.body === undefined ? undefined : nodeBody(request.body, request.onBodyProgress);
      const headers: Record<string, string> = { ...request.headers };
      if (body?.length !== undefined) headers["Content-Length"] = String(body.length);
      const outgoing = (secure ? httpsRequest : httpRequest)(
        url,
        { method: request.method, headers, agent: secure ? tls : plain, signal: request.signal },
        (message) => resolve({ status: message.statusCode ?? 0, headers: headersOf(message), body: webBody(message) }),
      );
      outgoing.on("error", reject);
      if (!body) outgoing.end();
      else {
        body.stream.on("error", (error) => outgoing.destroy(error));
        body.stream.pipe(outgoing);
      }
    });
}

export const nodePlatform: Platform = {
  transport: (options) => (options.fetch ? fetchTransport(options.fetch) : httpsTransport(options.ca)),
  openFile: (path) => openAsBlob(path),
  userAgent: `rms-sdk-node/${SDK_VERSION} node/${process.version}`,
};
