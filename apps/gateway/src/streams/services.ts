import type { Logger } from "pino";
import type { RequestLogDocument } from "../request-logs/store.js";
import type { StreamConnection, StreamEnd, StreamLimits } from "./connection.js";
import type { ChangeFeed } from "./feed.js";
import type { StreamHub } from "./hub.js";
import type { StreamSlots } from "./slots.js";

/** One kind of stream: its hub and the feed that fills it. */
export interface StreamChannel<V> {
  readonly hub: StreamHub<V>;
  readonly feed: ChangeFeed<V>;
}

/** What a stream counts, by kind (`events`, `request_logs`). */
export interface StreamCounters {
  opened(kind: string): void;
  ended(kind: string, reason: StreamEnd): void;
}

/** The live part of a gateway's value of an event to a stream's filter: its type and the object it is about. */
export interface EventValue {
  readonly type: string;
  readonly objectId: string;
}

/** Everything the stream operations share in one gateway process (docs/streams.md). */
export class StreamServices {
  private readonly open = new Set<StreamConnection<never>>();

  constructor(
    readonly events: StreamChannel<EventValue>,
    /** Absent when the gateway keeps no request logs (REQUEST_LOGS=off): that stream answers 503. */
    readonly requestLogs: StreamChannel<RequestLogDocument> | undefined,
    readonly slots: StreamSlots,
    readonly limits: StreamLimits,
    readonly counters: StreamCounters,
    readonly logger: Logger,
  ) {}

  /** Keeps `connection` until it ends, so a shutdown can end it. */
  track<V>(connection: StreamConnection<V>): () => void {
    const open = connection as unknown as StreamConnection<never>;
    this.open.add(open);
    return () => {
      this.open.delete(open);
    };
  }

  /** Streams open now. */
  get size(): number {
    return this.open.size;
  }

  /** Bytes written to the open streams and not yet taken by their clients: bounded by `size` x `limits.bufferBytes` (and a frame each). */
  get bufferedBytes(): number {
    let bytes = 0;
    for (const connection of this.open) bytes += connection.buffered;
    return bytes;
  }

  /** Ends every open stream (their clients resume elsewhere), stops the feeds and gives back the places. */
  async close(): Promise<void> {
    for (const connection of [...this.open]) connection.end("shutdown");
    await Promise.all([this.events.feed.stop(), this.requestLogs?.feed.stop()]);
    await this.slots.close();
  }
}
