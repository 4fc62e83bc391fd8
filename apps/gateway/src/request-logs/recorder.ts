import type { Logger } from "pino";
import type { RefusedRecord, RequestLogDocument } from "./store.js";

/**
 * Where a batch goes: one insert per batch (RequestLogStore.insertBatch), answering the records the database will
 * never take (the others are written), and throwing when the batch as a whole did not go.
 */
export interface RequestLogSink {
  insertBatch(batch: readonly RequestLogDocument[]): Promise<readonly RefusedRecord[]>;
}

/** What the recorder reports to the metrics (gateway_request_logs_*). */
export interface RecorderCounters {
  dropped(count: number): void;
  written(count: number): void;
  /** Records the database refused, each dropped alone (its batch's others are written). */
  refused?(count: number): void;
}

export interface RecorderOptions {
  /** Most records waiting in memory (REQUEST_LOGS_BUFFER, 10,000): beyond it the oldest go, counted. */
  readonly capacity: number;
  /** Longest wait of a record before its batch is written, when the database takes writes. */
  readonly flushMs?: number;
  /** Most records in one insert. */
  readonly batchMax?: number;
  /** Shortest interval between two log lines about dropped records. */
  readonly dropLogMs?: number;
  readonly counters?: RecorderCounters;
}

/**
 * How long the first record of a batch waits for others before the batch is written (CONTRACT.md section 12: "at most
 * about 1 s later"). A batch is one transaction with its tenants' stream counters (`@rms/positions`), whose fixed cost
 * is paid per batch: written in batches of 1,000 instead of 250, a record costs the gateway and the database about a
 * third less CPU (bench/src/request-logs-write.mjs, REQUEST_LOGS_WRITE_BATCH), which is the GET row's margin over
 * recording off.
 */
export const REQUEST_LOG_FLUSH_MS = 750;

/**
 * Request logs on their way to the database, off every request's path (CONTRACT.md section 12): `add` only queues
 * the built record (no I/O, never throws); a timer writes what waits in one insert per batch at most `flushMs`
 * later, one batch in flight at a time. While the database does not take them, records wait (a failed batch goes
 * back to the front) and at most `capacity` are kept in the buffer, beside the one batch being written (which
 * cannot be recalled; if its insert fails it comes back to the front and the bound drops the oldest of all): the
 * oldest are dropped first, counted, and logged once per `dropLogMs`. A record the database refuses (one no retry
 * would write) never holds its batch: it is dropped alone, counted and logged once, and the rest are written.
 * Nothing here can fail or slow the request it records.
 */
export class RequestLogRecorder {
  private queue: RequestLogDocument[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  /** Records in the batch being written. */
  private writing = 0;
  private failures = 0;
  private droppedSinceLog = 0;
  private lastDropLog = 0;
  private refusedSinceLog = 0;
  private lastRefusalLog = 0;
  private closed = false;
  private readonly flushMs: number;
  private readonly batchMax: number;
  private readonly dropLogMs: number;

  constructor(
    private readonly sink: RequestLogSink,
    private readonly logger: Logger,
    private readonly options: RecorderOptions,
  ) {
    this.flushMs = options.flushMs ?? REQUEST_LOG_FLUSH_MS;
    this.batchMax = options.batchMax ?? 1_000;
    this.dropLogMs = options.dropLogMs ?? 10_000;
  }

  /** Records not in the database yet: waiting in the buffer, and the batch being written. */
  get waiting(): number {
    return this.queued + this.writing;
  }

  /** Records in the buffer (the batch being written is not: it comes back to the front if its insert fails). */
  private get queued(): number {
    return this.queue.length - this.head;
  }

  /** Queues one record; drops the oldest waiting one when the buffer is full. */
  add(record: RequestLogDocument): void {
    if (this.closed) return;
    this.queue.push(record);
    this.trim();
    this.schedule(this.flushMs);
  }

  /** Writes what waits now (tests; shutdown), resolving once the database has it or refused it. */
  async flush(): Promise<void> {
    for (;;) {
      while (this.inFlight) await this.inFlight;
      if (this.queued === 0) return;
      await this.writeBatch();
      if (this.failures > 0) return;
    }
  }

  /** Writes what waits (one last attempt), then takes no more. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush().catch(() => undefined);
    this.closed = true;
    this.reportDrops(true);
    this.reportRefused([], true);
  }

  private trim(): void {
    const over = this.queued - this.options.capacity;
    if (over <= 0) return;
    this.head += over;
    this.options.counters?.dropped(over);
    this.droppedSinceLog += over;
    this.reportDrops(false);
    this.compact();
  }

  private compact(): void {
    if (this.head > 4_096 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  /** One line per interval while records are being dropped, with how many since the last line. */
  private reportDrops(force: boolean): void {
    if (this.droppedSinceLog === 0) return;
    const now = Date.now();
    if (!force && now - this.lastDropLog < this.dropLogMs) return;
    this.logger.warn(
      { dropped: this.droppedSinceLog, buffer: this.options.capacity },
      "request logs dropped: the database did not take them and the buffer was full",
    );
    this.droppedSinceLog = 0;
    this.lastDropLog = now;
  }

  /**
   * Refused records are counted; each is logged once (its request id, and the database's reason), at most one line
   * per `dropLogMs` with the count since the last line, so a flood of them cannot flood the log.
   */
  private reportRefused(refused: readonly RefusedRecord[], force = false): void {
    this.options.counters?.refused?.(refused.length);
    this.refusedSinceLog += refused.length;
    const now = Date.now();
    if (this.refusedSinceLog === 0 || (!force && now - this.lastRefusalLog < this.dropLogMs)) return;
    const [first] = refused;
    this.logger.warn(
      { ...(first ? { request_id: first.id, reason: first.reason.slice(0, 300) } : {}), refused: this.refusedSinceLog },
      "request log refused by the database: dropped alone, the rest of its batch written",
    );
    this.refusedSinceLog = 0;
    this.lastRefusalLog = now;
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.inFlight || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.writeBatch();
    }, delayMs);
    this.timer.unref();
  }

  private writeBatch(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    const batch = this.queue.slice(this.head, this.head + this.batchMax);
    if (batch.length === 0) return Promise.resolve();
    this.head += batch.length;
    this.compact();
    this.writing = batch.length;
    this.inFlight = (async () => {
      try {
        const refused = await this.sink.insertBatch(batch);
        this.failures = 0;
        this.options.counters?.written(batch.length - refused.length);
        if (refused.length > 0) this.reportRefused(refused);
      } catch (error) {
        // Back to the front, oldest first; the buffer's bound then drops the oldest of all.
        this.queue = [...batch, ...this.queue.slice(this.head)];
        this.head = 0;
        this.writing = 0;
        this.failures += 1;
        if (this.failures === 1)
          this.logger.warn({ err: error instanceof Error ? error.message : String(error), waiting: this.queued }, "request logs not written yet; retrying");
        this.trim();
      } finally {
        this.inFlight = undefined;
        this.writing = 0;
        this.reportDrops(false);
      }
      // More waiting: at once after a success (a backlog drains batch after batch), backing off after failures.
      if (this.queued > 0 && !this.closed)
        this.schedule(this.failures === 0 ? (this.queued >= this.batchMax ? 0 : this.flushMs) : Math.min(250 * 2 ** this.failures, 5_000));
    })();
    return this.inFlight;
  }
}
