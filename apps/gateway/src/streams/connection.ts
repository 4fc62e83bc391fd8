import { once } from "node:events";
import type { Response } from "express";
import type { ChangeFeed } from "./feed.js";
import type { HubListener, StreamHub, StreamItem } from "./hub.js";
import { KEEP_ALIVE_FRAME, SSE_HEADERS } from "./sse.js";

/** The limits of every stream (CONTRACT.md section 14; docs/streams.md, "Limits"). */
export interface StreamLimits {
  /** A comment line after this long (15 s). */
  readonly keepAliveMs: number;
  /** The server ends a stream after this long (an hour); the client resumes. */
  readonly maxAgeMs: number;
  /** Streams one key may hold at once (10). */
  readonly perKey: number;
  /** Bytes written to a stream and not yet taken by its client past which it is dropped at its next frame (a slow or stalled reader). */
  readonly bufferBytes: number;
  /** Items that may wait for a stream while it catches up; past it they are let go and read again by position. */
  readonly pendingMax: number;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  keepAliveMs: 15_000,
  maxAgeMs: 3_600_000,
  perKey: 10,
  bufferBytes: 256 * 1024,
  pendingMax: 1_000,
};

/** Where a stream starts: after a position, after an item by its id (`Last-Event-ID`, `starting_after`), or now. */
export type StreamStart = { readonly position: number } | { readonly id: string } | null;

/** One catch-up read: the matching items after the start, by position, the last position examined, and the head. */
export interface CatchUp<V> {
  readonly items: readonly StreamItem<V>[];
  readonly through: number;
  readonly head: number;
}

/** Reads a tenant's items after `start`, seeing at least everything committed at or before `afterClusterTime`. */
export type CatchUpReader<V> = (start: StreamStart, afterClusterTime: bigint) => Promise<CatchUp<V>>;

/** Why a stream ended, as its metric counts it. */
export type StreamEnd = "client" | "max_age" | "slow" | "shutdown" | "error" | "revoked";

export interface StreamSpec<V> {
  readonly tenant: string;
  readonly hub: StreamHub<V>;
  readonly feed: ChangeFeed<V>;
  readonly read: CatchUpReader<V>;
  /** The stream's filter, applied to live items (a catch-up read applies it itself). */
  readonly passes: (value: V) => boolean;
  readonly start: StreamStart;
  readonly limits: StreamLimits;
  /** Told once, when the stream ends, why. */
  readonly ended: (reason: StreamEnd) => void;
}

/**
 * One client's stream (docs/streams.md): it subscribes to its tenant in the hub first, then reads by position from
 * its start (with the feed's commit time, so the read sees everything the hub handed out before), writes what it
 * read, and goes live: each live item one past the last position it has is written if it passes the filter; an item
 * at or below it was written already (or filtered); one further on means a gap, read by position. So every item
 * comes once, in position order. Answers 200 only once the first read has worked: a refusal before (503, 400) is an
 * ordinary error answer.
 */
export class StreamConnection<V> implements HubListener<V> {
  private position = 0;
  private live = false;
  private pending: StreamItem<V>[] = [];
  private overflowed = false;
  private again = false;
  private catchingUp: Promise<void> | null = null;
  private closed = false;
  /** True once the 200 has gone: before it, a reset only asks the first reads to go on (they see it anyway). */
  private started = false;
  private endReason: StreamEnd = "client";
  private unsubscribe: () => void = () => {};
  private timers: NodeJS.Timeout[] = [];
  private readonly gone: Promise<void>;

  constructor(
    private readonly res: Response,
    private readonly spec: StreamSpec<V>,
  ) {
    this.gone = new Promise((resolve) => res.once("close", resolve)).then(() => this.onClose());
  }

  /** Runs the stream until it ends; rejects (nothing sent) when the feed or the first read fails. `opened`: told at the 200. */
  async serve(opened: () => void = () => {}): Promise<void> {
    const { spec, res } = this;
    this.unsubscribe = spec.hub.subscribe(spec.tenant, this);
    let first: CatchUp<V>;
    try {
      await spec.feed.ready();
      first = await spec.read(spec.start, spec.feed.clusterTime);
    } catch (error) {
      this.unsubscribe();
      throw error;
    }
    if (this.closed) return;
    res.status(200);
    for (const [name, value] of Object.entries(SSE_HEADERS)) res.setHeader(name, value);
    res.flushHeaders();
    this.started = true;
    opened();
    for (const item of first.items) this.send(item.frame());
    this.position = first.through;
    this.timers.push(setInterval(() => this.send(KEEP_ALIVE_FRAME), spec.limits.keepAliveMs));
    this.timers.push(setTimeout(() => this.end("max_age"), spec.limits.maxAgeMs));
    if (first.through >= first.head && !this.again) this.goLive();
    else this.catchUp();
    await this.gone;
  }

  /** Bytes written to the stream that its client has not taken yet (at most about `bufferBytes`: past it, it is dropped). */
  get buffered(): number {
    return this.closed ? 0 : this.res.writableLength;
  }

  /** Ends the stream (the client resumes from its last id): gracefully, or at once for a reader that does not read. */
  end(reason: StreamEnd): void {
    if (this.closed || this.res.writableEnded) return;
    this.endReason = reason;
    if (reason === "slow") this.res.destroy();
    else this.res.end();
  }

  onItems(items: readonly StreamItem<V>[]): void {
    if (this.closed) return;
    if (this.live) {
      this.process(items);
      return;
    }
    if (this.overflowed) return;
    this.pending.push(...items);
    // Past the bound they are let go: the catch-up reads them by position.
    if (this.pending.length > this.spec.limits.pendingMax) {
      this.pending = [];
      this.overflowed = true;
    }
  }

  onReset(): void {
    if (this.closed) return;
    if (!this.started) {
      this.again = true;
      return;
    }
    this.catchUp();
  }

  private process(items: readonly StreamItem<V>[]): void {
    for (const [i, item] of items.entries()) {
      if (this.closed) return;
      if (item.position <= this.position) continue;
      if (item.position > this.position + 1) {
        // A gap: what lies between is read by position, then these.
        this.live = false;
        this.pending = items.slice(i);
        this.catchUp();
        return;
      }
      this.position = item.position;
      if (this.spec.passes(item.value)) this.send(item.frame());
    }
  }

  private catchUp(): void {
    this.live = false;
    if (this.catchingUp) {
      this.again = true;
      return;
    }
    this.catchingUp = this.readToHead()
      .catch(() => this.end("error"))
      .finally(() => {
        this.catchingUp = null;
      });
  }

  /** Reads by position until the head, again while more was asked meanwhile, then takes what waited and goes live. */
  private async readToHead(): Promise<void> {
    do {
      this.again = false;
      this.overflowed = false;
      for (;;) {
        const page = await this.spec.read({ position: this.position }, this.spec.feed.clusterTime);
        if (this.closed) return;
        for (const item of page.items) if (item.position > this.position) this.send(item.frame());
        this.position = Math.max(this.position, page.through);
        if (this.res.writableNeedDrain) await Promise.race([once(this.res, "drain"), this.gone]);
        if (this.closed) return;
        if (this.position >= page.head) break;
      }
    } while (this.again || this.overflowed);
    this.goLive();
  }

  private goLive(): void {
    this.live = true;
    const waiting = this.pending;
    this.pending = [];
    this.process(waiting);
  }

  /**
   * Writes a frame. A client that let more than `bufferBytes` wait before it is dropped (it resumes from its last id):
   * so one frame larger than the bound (a job's event) never drops a reader that reads.
   */
  private send(frame: string): void {
    if (this.closed || this.res.writableEnded) return;
    const waiting = this.res.writableLength;
    this.res.write(frame);
    if (waiting > this.spec.limits.bufferBytes) this.end("slow");
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    for (const timer of this.timers) clearTimeout(timer);
    this.pending = [];
    this.spec.ended(this.endReason);
  }
}
