/**
 * Group commit: writes that many callers ask for one at a time, made together. A caller adds its item and
 * waits for its own answer; the items in hand are written by one `flush` (one insertMany, one bulkWrite).
 * Nothing waits for company: the items in hand go after `windowMs` (0: once this turn of the event loop has
 * run), beside the flushes under way while fewer than `concurrency` are, else when one of them ends, so a
 * write is late by at most the window and one flush's round trip, and under load each flush carries what
 * came during the one before.
 *
 * A failed flush fails every caller of it; each caller decides (the deliveries queue leaves its delivery to
 * its lease, as a failed single write did).
 */
export interface GroupCommitOptions<I, R> {
  /** Writes `items` (at most `maxBatch`) and answers one result per item, in order. */
  readonly flush: (items: readonly I[]) => Promise<readonly R[]>;
  /** How long the first item waits for others when no flush is running (ms); default 0. */
  readonly windowMs?: number;
  /** Items one flush writes at most; the rest go in the next. */
  readonly maxBatch?: number;
  /** Flushes under way at once at most (the next waits for one to end); default 2. */
  readonly concurrency?: number;
}

interface Waiting<I, R> {
  readonly item: I;
  resolve(result: R): void;
  reject(error: unknown): void;
}

export const DEFAULT_GROUP_MAX_BATCH = 500;

export class GroupCommit<I, R> {
  private readonly waiting: Waiting<I, R>[] = [];
  private readonly windowMs: number;
  private readonly maxBatch: number;
  private readonly concurrency: number;
  private running = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly settled = new Set<Promise<void>>();
  /** Flushes made, and items written by them (tests, metrics). */
  flushes = 0;
  items = 0;

  constructor(private readonly options: GroupCommitOptions<I, R>) {
    this.windowMs = options.windowMs ?? 0;
    this.maxBatch = options.maxBatch ?? DEFAULT_GROUP_MAX_BATCH;
    this.concurrency = options.concurrency ?? 2;
  }

  /** Adds one item; resolves with its result once the flush that wrote it has ended. */
  add(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves once every item added so far has been flushed (an orderly stop). */
  async idle(): Promise<void> {
    while (this.waiting.length > 0 || this.settled.size > 0) {
      if (this.waiting.length > 0 && this.timer === null && this.running < this.concurrency) this.start();
      await Promise.race([...this.settled, new Promise((resolve) => setTimeout(resolve, this.windowMs + 1))]);
    }
  }

  private schedule(): void {
    // Every flush busy: the items gather and go when one ends (`start` from its end).
    if (this.timer !== null || this.running >= this.concurrency) return;
    const go = () => {
      this.timer = null;
      this.start();
    };
    // No window: what is in hand once this turn's I/O callbacks have run (a timer would add a loaded loop's lag).
    this.timer = this.windowMs > 0 ? setTimeout(go, this.windowMs) : (setImmediate(go) as unknown as NodeJS.Timeout);
  }

  private start(): void {
    if (this.waiting.length === 0 || this.running >= this.concurrency) return;
    const batch = this.waiting.splice(0, this.maxBatch);
    this.running++;
    const done: Promise<void> = this.flushBatch(batch).finally(() => {
      this.running--;
      this.settled.delete(done);
      // What came in meanwhile goes at once: it has waited a round trip already.
      if (this.waiting.length > 0) this.start();
    });
    this.settled.add(done);
    // More than one batch in hand: a second flush starts beside the first.
    if (this.waiting.length >= this.maxBatch) this.start();
  }

  private async flushBatch(batch: readonly Waiting<I, R>[]): Promise<void> {
    this.flushes++;
    this.items += batch.length;
    try {
      const results = await this.options.flush(batch.map((w) => w.item));
      for (const [i, w] of batch.entries()) w.resolve(results[i] as R);
    } catch (error) {
      for (const w of batch) w.reject(error);
    }
  }
}
