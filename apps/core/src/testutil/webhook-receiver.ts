import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { generate } from "selfsigned";

/** A certificate made at test time for the given DNS names and IP addresses. */
export async function testCertificate(names: { dns?: string[]; ip?: string[] }): Promise<{ cert: string; key: string }> {
  const notBefore = new Date(Date.now() - 60_000);
  const pems = await generate([{ name: "commonName", value: names.dns?.[0] ?? names.ip?.[0] ?? "test" }], {
    keyType: "ec",
    curve: "P-256",
    algorithm: "sha256",
    notBeforeDate: notBefore,
    notAfterDate: new Date(notBefore.getTime() + 86_400_000),
    extensions: [
      { name: "basicConstraints", cA: false },
      { name: "extKeyUsage", serverAuth: true },
      {
        name: "subjectAltName",
        altNames: [...(names.dns ?? []).map((value) => ({ type: 2 as const, value })), ...(names.ip ?? []).map((ip) => ({ type: 7 as const, ip }))],
      },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}

export interface ReceivedDelivery {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** Answers one request; the default answers 200 "ok". It may also never answer. */
export type ReceiverHandler = (request: IncomingMessage, response: ServerResponse, body: string) => void;

export interface Receiver {
  readonly port: number;
  /** `http(s)://<listen address or host>:<port><path>`. */
  url(path?: string, host?: string): string;
  readonly deliveries: ReceivedDelivery[];
  /** Connections accepted, even those that never sent a complete request. */
  readonly connections: number;
  /** Connections the client closed (or the server dropped) so far. */
  readonly closedConnections: number;
  close(): Promise<void>;
}

/** A webhook receiver on 127.0.0.1 (or `listenOn`), port 0; with `tls`, HTTPS under that certificate. */
export async function startReceiver(options: { tls?: { cert: string; key: string }; handler?: ReceiverHandler; listenOn?: string } = {}): Promise<Receiver> {
  const deliveries: ReceivedDelivery[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  let closedConnections = 0;
  const handler = options.handler ?? ((_request, response) => response.end("ok"));
  const onRequest = (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      deliveries.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers, body });
      handler(request, response, body);
    });
  };
  const server: Server = options.tls ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, onRequest) : createHttpServer(onRequest);
  server.on("connection", (socket: Socket) => {
    connections++;
    sockets.add(socket);
    socket.on("close", () => {
      closedConnections++;
      sockets.delete(socket);
    });
  });
  const listenOn = options.listenOn ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, listenOn, resolve));
  const port = (server.address() as AddressInfo).port;
  const scheme = options.tls ? "https" : "http";
  return {
    port,
    url: (path = "/hook", host = listenOn.includes(":") ? `[${listenOn}]` : listenOn) => `${scheme}://${host}:${port}${path}`,
    deliveries,
    get connections() {
      return connections;
    },
    get closedConnections() {
      return closedConnections;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
