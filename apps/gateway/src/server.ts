import { createServer as createHttpServer, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { pino, type Logger } from "pino";
import { createGatewayApp } from "./app.js";
import type { GatewayConfig } from "./config.js";
import { connectCore, type CoreClients } from "./core.js";
import { startMetricsServer } from "@rms/metrics-server";
import { gatewayMetrics } from "./metrics.js";
import { loadTls } from "./transport/tls.js";
import type { RateLimiter } from "./ratelimit/index.js";
import { openStores } from "./stores.js";
import { KeyRevoker } from "./revocation/revoker.js";
import { answerClientErrors, type PlainListener } from "./plain-http/client-error.js";
import { AddressRateLimit } from "./ratelimit/index.js";
import { normalizeIp } from "./transport/client-address.js";
import { ConnectionLimit } from "./transport/connection-limit.js";
import { divertPlainHttp } from "./plain-http/on-tls-port.js";
import { acceptProxyProtocol } from "./transport/proxy-protocol.js";
import { REQUEST_TIMEOUT_MS } from "./transport/request-timeout.js";
import { answerBeforeContinue } from "./transport/expect-continue.js";
import { lingerOnEarlyClose } from "./transport/linger.js";
import { DEFAULT_REQUEST_LOGS } from "./config.js";
import { RequestLogRecorder } from "./request-logs/recorder.js";
import { DEFAULT_STREAM_LIMITS } from "./streams/connection.js";
import { ChangeFeed } from "./streams/feed.js";
import { StreamHub } from "./streams/hub.js";
import { StreamServices, type EventValue } from "./streams/services.js";
import { eventFeedSource, eventTokenLost } from "./routes/events/stream.js";
import { requestLogFeedSource, requestLogTokenLost } from "./routes/request-logs/stream.js";
import type { RequestLogDocument } from "./request-logs/store.js";

/** Limits that keep one client from holding the gateway's sockets. */
export const SERVER_LIMITS = {
  headersTimeoutMs: 10_000,
  /** The whole request must arrive within this (transport/request-timeout.ts), but on the upload routes (idle timeout only). */
  requestTimeoutMs: REQUEST_TIMEOUT_MS,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 2_048,
  maxHeadersCount: 100,
  /** How often Node checks headersTimeout/requestTimeout (its default, 30 s, would let a slow client stay 40 s). */
  connectionsCheckingIntervalMs: 1_000,
  /** A connection that never completes its TLS handshake is closed after this (Node's default is 120 s). */
  handshakeTimeoutMs: 10_000,
  /**
   * A connection on which nothing moves either way for this long is closed (Node's default: never). The other
   * timeouts stop once a request has arrived; this one also ends a client that stops reading its answer.
   * Longer than a request's own work (one core call, 10 s deadline).
   */
  idleTimeoutMs: 30_000,
} as const;

export interface RunningGateway {
  readonly httpsPort: number;
  /** The plain-HTTP rejecting listener's port, or null when disabled. */
  readonly httpPort: number | null;
  /** The operator port serving `GET /metrics` on 127.0.0.1. */
  readonly metricsPort: number;
  /** PEM of the certificate served (for clients that must trust the development certificate). */
  readonly certificate: string;
  /** Stops accepting, lets in-flight requests finish (up to the grace period), closes core clients. */
  stop(): Promise<void>;
}

export interface StartOptions {
  readonly logger?: Logger;
  /** Core clients to use instead of connecting to `config.coreAddr`. */
  readonly core?: CoreClients;
  /** A rate limiter to use instead of the one of `config` (tests). */
  readonly rateLimiter?: RateLimiter;
  /** Most pending plain-HTTP revocations kept in memory (tests; MAX_PENDING_IN_MEMORY otherwise). */
  readonly maxPendingRevocations?: number;
}

const closing = new WeakSet<Server>();
const inFlight = new WeakMap<Server, Set<ServerResponse>>();

function applyLimits(server: Server, plainListener?: PlainListener): void {
  // Track responses in flight, so that a shutdown can ask their connections to close afterwards.
  const responses = new Set<ServerResponse>();
  inFlight.set(server, responses);
  server.on("request", (_req, res: ServerResponse) => {
    responses.add(res);
    res.once("close", () => responses.delete(res));
    if (closing.has(server) && !res.headersSent) res.setHeader("Connection", "close");
  });
  answerClientErrors(server, plainListener);
  answerBeforeContinue(server);
  lingerOnEarlyClose(server);
  server.headersTimeout = SERVER_LIMITS.headersTimeoutMs;
  // Applied per request by the app instead (transport/request-timeout.ts), so that uploads can take longer when data keeps coming.
  server.requestTimeout = 0;
  server.keepAliveTimeout = SERVER_LIMITS.keepAliveTimeoutMs;
  server.timeout = SERVER_LIMITS.idleTimeoutMs;
  server.maxConnections = SERVER_LIMITS.maxConnections;
  server.maxHeadersCount = SERVER_LIMITS.maxHeadersCount;
}

function listen(server: Server, port: number, host: string | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, ...(host ? { host } : {}) }, () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Closes a server: no new connections, idle ones closed now, busy ones after their response or the grace period. */
function close(server: Server, graceMs: number): Promise<void> {
  if (!server.listening) return Promise.resolve();
  closing.add(server);
  for (const res of inFlight.get(server) ?? []) if (!res.headersSent) res.setHeader("Connection", "close");
  return new Promise((resolve) => {
    const force = setTimeout(() => server.closeAllConnections(), graceMs);
    force.unref();
    server.close(() => {
      clearTimeout(force);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/** The streams' hubs and feeds (docs/streams.md): events from core's watch, request logs from this gateway's own change stream. */
function streamServices(
  config: GatewayConfig,
  core: CoreClients,
  stores: ReturnType<typeof openStores>,
  logger: Logger,
  metrics: ReturnType<typeof gatewayMetrics>,
  requestLogs: boolean,
): StreamServices {
  const eventsHub = new StreamHub<EventValue>();
  const requestLogsHub = new StreamHub<RequestLogDocument>();
  return new StreamServices(
    { hub: eventsHub, feed: new ChangeFeed("events", eventFeedSource(core), eventsHub, logger, { tokenLost: eventTokenLost }) },
    requestLogs
      ? {
          hub: requestLogsHub,
          feed: new ChangeFeed("request_logs", requestLogFeedSource(stores.requestLogs), requestLogsHub, logger, { tokenLost: requestLogTokenLost }),
        }
      : undefined,
    stores.streamSlots,
    { ...DEFAULT_STREAM_LIMITS, ...config.streams },
    {
      opened: (kind) => metrics.streamsOpen.labels(kind).inc(),
      ended: (kind, reason) => {
        metrics.streamsOpen.labels(kind).dec();
        metrics.streamsEnded.labels(kind, reason).inc();
      },
    },
    logger,
  );
}

/** Starts the HTTPS API and (unless disabled) the plain-HTTP rejecting listener. */
export async function startGateway(config: GatewayConfig, options: StartOptions = {}): Promise<RunningGateway> {
  const logger = options.logger ?? pino({ level: config.logLevel });
  const tls = await loadTls(config);
  if (tls.generated) logger.info({ cert_file: tls.certFile }, "generated a self-signed development certificate for localhost");
  const core = options.core ?? connectCore(config.coreAddr, config.coreToken, config.coreTls);
  const metrics = gatewayMetrics();
  const stores = openStores(config, logger, { rateLimiter: options.rateLimiter });
  const revoker = new KeyRevoker(
    core,
    stores.revocations,
    logger,
    options.maxPendingRevocations === undefined ? {} : { maxPending: options.maxPendingRevocations },
  );
  metrics.watchPendingRevocations(() => revoker.pendingCount);
  const trustedProxies = new Set(config.trustedProxies.map(normalizeIp));
  const addressLimit = new AddressRateLimit(stores.rateLimiter, config.addressRateLimit, trustedProxies);
  const requestLogSettings = config.requestLogs ?? DEFAULT_REQUEST_LOGS;
  const recorder = requestLogSettings.enabled
    ? new RequestLogRecorder(stores.requestLogs, logger, {
        capacity: requestLogSettings.buffer,
        counters: {
          dropped: (n) => metrics.requestLogsDropped.inc(n),
          written: (n) => metrics.requestLogsWritten.inc(n),
          refused: (n) => metrics.requestLogsRefused.inc(n),
        },
      })
    : undefined;
  if (recorder) metrics.watchRequestLogsWaiting(() => recorder.waiting);
  const streams = streamServices(config, core, stores, logger, metrics, recorder !== undefined);
  metrics.watchStreamBuffers(() => streams.bufferedBytes);
  const app = createGatewayApp({
    core,
    config,
    logger,
    metrics,
    revoker,
    addressLimit,
    rateLimiter: stores.rateLimiter,
    dashboardDir: config.dashboardDir ?? null,
    local: { requestLogs: stores.requestLogs },
    streams,
    ...(recorder ? { requestLogs: { recorder, retentionDays: requestLogSettings.retentionDays } } : {}),
  });

  const serverOptions = { connectionsCheckingInterval: SERVER_LIMITS.connectionsCheckingIntervalMs };
  const https = createHttpsServer(
    { ...serverOptions, cert: tls.cert, key: tls.key, minVersion: "TLSv1.2", handshakeTimeout: SERVER_LIMITS.handshakeTimeoutMs },
    app,
  );
  // Plain HTTP sent to the HTTPS port is answered as the plain listener answers it (keys revoked, 403), by an HTTP
  // server of the same app bound to no port (plain-http/on-tls-port.ts).
  const plainOnTlsPort = createHttpServer(serverOptions, app);
  divertPlainHttp(https, plainOnTlsPort, SERVER_LIMITS.handshakeTimeoutMs);
  applyLimits(https);
  const plain = config.httpPort === null ? undefined : createHttpServer(serverOptions, app);
  if (plain) applyLimits(plain, { trustedProxies, revoker, addressLimit });
  applyLimits(plainOnTlsPort, { trustedProxies, revoker, addressLimit });
  const proxyProtocolPeers = new Set(config.proxyProtocolPeers.map(normalizeIp));
  // Exempt from the connection cap: proxies whose connections carry many clients (a PROXY peer's connections are
  // counted as the client each header names; one without a client, a health check, as the peer's and exempt).
  const exempt = new Set([...trustedProxies, ...proxyProtocolPeers]);
  const perAddress = new ConnectionLimit(config.maxConnectionsPerAddress, exempt, () => metrics.connectionsRefused.inc());
  for (const server of [https, plain]) if (server) perAddress.attach(server);
  // Last, so that it runs before every other connection listener: a load balancer in TCP mode names the client,
  // and the connection is counted (per-address connection limit) and limited as that client's.
  for (const server of [https, plain]) if (server) acceptProxyProtocol(server, proxyProtocolPeers);

  let metricsServer: Awaited<ReturnType<typeof startMetricsServer>> | undefined;
  try {
    const httpsPort = await listen(https, config.port, config.host);
    const httpPort = plain ? await listen(plain, config.httpPort!, config.host) : null;
    metricsServer = await startMetricsServer(metrics.registry, config.metricsPort);
    logger.info({ https_port: httpsPort, http_port: httpPort, metrics_port: metricsServer.port, core: config.coreAddr }, "gateway listening");
    let stopping: Promise<void> | undefined;
    return {
      httpsPort,
      httpPort,
      metricsPort: metricsServer.port,
      certificate: tls.cert,
      stop: () =>
        (stopping ??= (async () => {
          // Streams end first (their clients resume at another gateway), or they would hold the close to its grace.
          await streams.close();
          await Promise.all([close(https, config.shutdownGraceMs), plain ? close(plain, config.shutdownGraceMs) : undefined]);
          await metricsServer?.close();
          revoker.close();
          if (!options.core) core.close();
          // The requests answered last are written before the database connection closes (one attempt).
          await recorder?.close();
          await stores.close();
        })()),
    };
  } catch (error) {
    await streams.close();
    await Promise.all([close(https, 0), plain ? close(plain, 0) : undefined, metricsServer?.close()]);
    revoker.close();
    if (!options.core) core.close();
    await recorder?.close();
    await stores.close();
    throw error;
  }
}
