import { PRESENTED_KEY_METADATA, RpcError } from "@rms/proto";
import { status as GrpcStatus } from "@grpc/grpc-js";
import { tenantKey } from "@rms/positions";
import type { Request, Response } from "express";
import { ApiError, toApiError } from "../errors.js";
import type { Tenant } from "../auth/principal.js";
import type { CoreClients } from "../core.js";
import { StreamConnection, type CatchUpReader, type StreamStart } from "./connection.js";
import type { StreamChannel, StreamServices } from "./services.js";

/** What a stream reads of its request: the part of a stream operation's input (engine/operation.ts) it needs. */
export interface StreamRequest {
  readonly req: Request;
  readonly res: Response;
  readonly tenant: Tenant;
  /** The id of the key the stream was opened with: its places are counted per key. */
  readonly keyId: string;
  /** Query parameters, unknown ones already refused. */
  readonly params: Readonly<Record<string, unknown>>;
  /** The metadata of its core calls (the presented key, which the stream re-checks). */
  readonly metadata: Readonly<Record<string, string>>;
  readonly core: Pick<CoreClients, "admin">;
}

/** How often a stream asks core whether its key still works (a revoked or expired key's streams end). */
export const KEY_RECHECK_MS = 60_000;

/**
 * Where a stream starts: after the item its client names, by `Last-Event-ID` (what an EventSource sends when it
 * reconnects, so it wins over the URL's) or `starting_after`; else now. An id of the wrong form is 400, naming where
 * it came from.
 */
export function streamStartOf(
  input: Pick<StreamRequest, "req" | "params">,
  pattern: RegExp,
  noun: string,
): { readonly id: string; readonly param: string } | null {
  const header = input.req.headers["last-event-id"];
  const fromHeader = typeof header === "string" && header.trim() !== "" ? header.trim() : undefined;
  const fromQuery = input.params["starting_after"];
  if (fromQuery !== undefined && typeof fromQuery !== "string")
    throw new ApiError("parameter_invalid", "Invalid starting_after: must be a string.", { param: "starting_after" });
  const [id, param] = fromHeader !== undefined ? [fromHeader, "Last-Event-ID"] : [fromQuery, "starting_after"];
  if (id === undefined || id === "") return null;
  if (!pattern.test(id)) throw new ApiError("parameter_invalid", `Invalid ${param}: must be ${noun} id.`, { param });
  return { id, param };
}

/** The services of the streams, or 503 when this gateway runs without them. */
export function streamServices(deps: { readonly streams?: StreamServices | undefined }): StreamServices {
  if (!deps.streams) throw ApiError.unavailable();
  return deps.streams;
}

export interface OpenStream<V> {
  readonly kind: "events" | "request_logs";
  readonly channel: StreamChannel<V>;
  readonly read: CatchUpReader<V>;
  readonly passes: (value: V) => boolean;
  readonly start: StreamStart;
}

/**
 * Serves one stream to its end: takes one of the key's places (the 11th is 429 `too_many_streams`), runs the
 * connection (docs/streams.md), ends it when the key stops working, and gives the place back when it ends.
 */
export async function serveStream<V>(input: StreamRequest, services: StreamServices, open: OpenStream<V>): Promise<void> {
  const { limits, slots, counters } = services;
  const slot = await slots.take(input.keyId, limits.perKey).catch((error: unknown) => {
    throw ApiError.unavailable(error);
  });
  if (!slot) throw new ApiError("too_many_streams", `This key already holds ${limits.perKey} open streams: close one first.`);
  let opened = false;
  let untrack: () => void = () => {};
  const connection = new StreamConnection(input.res, {
    tenant: tenantKey({ account: input.tenant.accountId, livemode: input.tenant.livemode }),
    hub: open.channel.hub,
    feed: open.channel.feed,
    read: open.read,
    passes: open.passes,
    start: open.start,
    limits,
    ended: (reason) => {
      slot.release();
      untrack();
      if (opened) counters.ended(open.kind, reason);
    },
  });
  untrack = services.track(connection);
  const recheck = setInterval(() => {
    void input.core.admin.verifyKey({ secret: input.metadata[PRESENTED_KEY_METADATA] ?? "" }).catch((error: unknown) => {
      if (error instanceof RpcError && error.grpcCode === GrpcStatus.UNAUTHENTICATED) connection.end("revoked");
    });
  }, KEY_RECHECK_MS);
  recheck.unref();
  try {
    await connection.serve(() => {
      opened = true;
      counters.opened(open.kind);
    });
  } catch (error) {
    // The feed that did not start in time, or a store that did not answer: unavailable, not a bug.
    if (error instanceof ApiError || error instanceof RpcError) throw toApiError(error);
    throw ApiError.unavailable(error);
  } finally {
    clearInterval(recheck);
  }
}
