import type { Logger } from "pino";
import type { StreamHub, StreamItem } from "./hub.js";

/** One message of a feed's source: items in commit order, the token to resume after it, the commit time it covers. */
export interface FeedMessage<V> {
  readonly items: readonly StreamItem<V>[];
  /** Resume after this message with it; null: unchanged. */
  readonly token: Uint8Array | null;
  /** A BSON timestamp as 64 bits: every item committed at or before it has come; 0n: unchanged. */
  readonly clusterTime: bigint;
}

/** Opens the source after `token` (null: from now on; its first message is then its start). */
export type FeedSource<V> = (token: Uint8Array | null, signal: AbortSignal) => AsyncIterable<FeedMessage<V>>;

export interface FeedOptions {
  /** First pause before a failed source is opened again (doubling to 5 s). */
  readonly retryMs?: number;
  /** How long a stream waits for the feed to start before it is answered 503. */
  readonly readyTimeoutMs?: number;
  /** True for a source's error that says its token cannot be resumed from: the next open starts afresh. */
  readonly tokenLost: (error: unknown) => boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());

/**
 * One gateway process's follower of one collection (docs/streams.md, "Fan-out"): a single source (core's WatchEvents
 * for events, the gateway's own change stream for request logs), opened when the first stream asks, reopened after a
 * failure from the last token it had (so an election, or core's restart, loses nothing), and published to the hub.
 * When the source cannot resume (its token's history is gone) it starts afresh, and every subscriber catches up by
 * position from where it was.
 */
export class ChangeFeed<V> {
  /** The latest commit time the feed has covered (BSON timestamp as 64 bits). */
  clusterTime = 0n;
  private token: Uint8Array | null = null;
  private started = false;
  private running: Promise<void> | null = null;
  private readonly abort = new AbortController();
  private waiters: (() => void)[] = [];

  constructor(
    private readonly name: string,
    private readonly source: FeedSource<V>,
    private readonly hub: StreamHub<V>,
    private readonly logger: Logger,
    private readonly options: FeedOptions,
  ) {}

  /** Resolves once the feed has started (its first source's start message); starts it on first use. */
  ready(): Promise<void> {
    this.running ??= this.run();
    if (this.started) return Promise.resolve();
    const timeoutMs = this.options.readyTimeoutMs ?? 10_000;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the ${this.name} feed did not start within ${timeoutMs} ms`)), timeoutMs);
      timer.unref();
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** True once started and while its source is open or being reopened. */
  get isStarted(): boolean {
    return this.started;
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.running?.catch(() => undefined);
  }

  private async run(): Promise<void> {
    let retryMs = this.options.retryMs ?? 250;
    while (!this.abort.signal.aborted) {
      const fresh = this.token === null;
      let first = true;
      try {
        for await (const message of this.source(this.token, this.abort.signal)) {
          if (message.clusterTime > this.clusterTime) this.clusterTime = message.clusterTime;
          if (message.token) this.token = message.token;
          if (first) {
            first = false;
            retryMs = this.options.retryMs ?? 250;
            // A source started afresh after an earlier one may have missed what committed in between: everyone catches up.
            if (fresh && this.started) this.hub.reset();
            this.markStarted();
          }
          this.hub.publish(message.items);
        }
      } catch (error) {
        if (this.abort.signal.aborted) return;
        if (this.options.tokenLost(error)) {
          this.logger.warn({ feed: this.name }, "stream feed cannot resume from its token: starting afresh, streams catch up by position");
          this.token = null;
          continue;
        }
        this.logger.warn({ feed: this.name, err: error instanceof Error ? error.message : String(error) }, "stream feed interrupted; reopening from its token");
      }
      if (this.abort.signal.aborted) return;
      await sleep(retryMs);
      retryMs = Math.min(retryMs * 2, 5_000);
    }
  }

  private markStarted(): void {
    this.started = true;
    const waiting = this.waiters;
    this.waiters = [];
    for (const resolve of waiting) resolve();
  }
}
