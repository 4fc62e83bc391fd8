// The one poller of the worker's leased queues (deliveries, jobs): claim, wake-up counter, back-off, stop.
import type { Logger } from "pino";
import type { WorkerContext, WorkerTask } from "./task.js";

/**
 * How often a poller whose wake-up stream is open reads the counter: the reads are then the backstop (a move
 * the open stream did not deliver, as from a stream stalled without an error or lagging behind the majority
 * commit), not the way work is found. 500 ms costs an idle worker 2 reads a second per queue instead of 50
 * (jobs) or 10 (deliveries), and still claims a missed wake-up within half the jobs' full look (1 s) and a
 * quarter of the deliveries' (2 s).
 */
export const WAKE_UP_BACKSTOP_MS = 500;

/** What work on a claimed item is handed: whether the worker is stopping, and a sleep that a stop ends at once. */
export interface Lane {
  stopping(): boolean;
  sleep(ms: number): Promise<void>;
}

export interface PollerOptions<T> {
  /** The queue's name in log lines. */
  readonly name: string;
  readonly logger: Logger;
  /** Items worked at once. */
  readonly concurrency: number;
  /**
   * Claims made at once while filling free lanes (default 1). A claim is a few sequential round trips, so one
   * at a time caps a worker at about one item per round-trip time however many lanes are free; several at
   * once overlap those round trips (each claim is a single-document write, so concurrent claims are safe).
   */
  readonly claimsAtOnce?: number;
  /**
   * Takes the next item under a lease (storage/lease.ts), or null when there is none to take now. Which item
   * comes next (order, fairness) is the claim's alone.
   */
  readonly claim: () => Promise<T | null>;
  /**
   * Instead of `claim`: takes several items at once (the places of one endpoint's lane, each with its
   * deliveries); empty when there is none to take now. The items of one answer may take the poller up to
   * that many past `concurrency`.
   */
  readonly claimSome?: () => Promise<readonly T[]>;
  /** Works one claimed item to its end or, once `lane.stopping()`, checkpoints and releases it. */
  readonly work: (item: T, lane: Lane) => Promise<void>;
  /** The queue's wake-up counter (one small document read by `_id`), which producers move after queueing work. */
  readonly signal: () => Promise<number>;
  /**
   * Subscribes to the counter's moves (a change stream, QueueSignal.watch): each one nudges the poller, so an
   * idle worker claims new work at once instead of at its next read. `streamOpen` tells whether the stream is
   * established (true) or not yet, failed or being opened again (false): while it is, the counter is read
   * every WAKE_UP_BACKSTOP_MS instead of `signalEveryMs`. Returns the unsubscribe, run at stop.
   */
  readonly wakeUps?: (wake: () => void, streamOpen: (open: boolean) => void) => () => Promise<void>;
  /** How often a poller with a free lane reads the counter while it has no open wake-up stream. */
  readonly signalEveryMs: number;
  /**
   * The back-off: how long a poller whose last claim found nothing (or failed) waits before it claims again
   * while the counter stands still, for what comes without a signal (an expired lease, a lost signal).
   */
  readonly idleMs: number;
  readonly now?: () => number;
}

/**
 * One worker process's poller over a leased queue (deliveries, jobs). It claims until every lane is busy
 * or nothing is there; a lane that frees claims the next item at once. While a lane is free it reads only
 * the queue's counter, every `signalEveryMs` (every WAKE_UP_BACKSTOP_MS while its wake-up stream is open),
 * and claims when the counter moved, when work it did asked to be looked at again (`lookAgainAt`), or after
 * `idleMs`: a claim is then rare work, not a poll.
 */
export class QueuePoller<T> {
  private readonly now: () => number;
  private readonly inFlight = new Set<Promise<void>>();
  /** Sleeps in hand, so a stop ends them at once. */
  private readonly sleeping = new Set<() => void>();
  private readonly lane: Lane = { stopping: () => this.stopped, sleep: (ms) => this.sleep(ms) };
  private filling: Promise<void> | null = null;
  /** A fill was asked for while one ran: the running one may already have given up, so another follows it. */
  private fillAgain = false;
  /** Claims under way (they count against `concurrency` with the work in flight). */
  private claiming = 0;
  private looking: Promise<void> | null = null;
  /** A nudge came while a look ran (its counter read may have been answered before the move): look again at once. */
  private lookAgain = false;
  /** Whether the wake-up stream is established (`wakeUps`' report): the counter reads are then only the backstop. */
  private wakeUpStreamOpen = false;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private unsubscribe: (() => Promise<void>) | null = null;
  /** The counter as last read; null before the first read. */
  private lastSignal: number | null = null;
  /** Set when a claim found nothing: no claim before this while the counter stands still. */
  private idleUntil = 0;
  /** The earliest time work asked to be looked at again. */
  private dueAt = Number.POSITIVE_INFINITY;

  constructor(private readonly options: PollerOptions<T>) {
    this.now = options.now ?? Date.now;
  }

  /** Reads the counter and claims now, then looks every `signalEveryMs` (or WAKE_UP_BACKSTOP_MS) until stopped. */
  start(): void {
    if (this.stopped || this.timer !== null || this.looking !== null) return;
    this.unsubscribe ??=
      this.options.wakeUps?.(
        () => this.nudge(),
        (open) => this.streamOpenChanged(open),
      ) ?? null;
    this.tick();
  }

  /** Takes no more work, ends the sleeps in hand, and waits for the work in hand (each checkpoints and releases). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const wake of [...this.sleeping]) wake();
    await this.unsubscribe?.();
    await this.looking;
    // An item claimed just as the stop came is still worked (and so released); then everything in hand is waited for.
    await this.filling;
    await Promise.allSettled([...this.inFlight]);
  }

  /** Claims once `atMs` has come even if the counter does not move (a retry the work scheduled itself). */
  lookAgainAt(atMs: number): void {
    this.dueAt = Math.min(this.dueAt, atMs);
  }

  /**
   * Looks now instead of at the next `signalEveryMs` (a change-stream wake-up: work was just queued); the
   * counter is read as at any look, so a nudge with nothing new costs one read, not a claim.
   */
  nudge(): void {
    if (this.stopped) return;
    // Claims under way may already have found nothing: one more fill follows them.
    if (this.filling !== null) this.fillAgain = true;
    if (this.looking !== null) this.lookAgain = true;
    if (this.looking !== null || this.timer === null) return;
    clearTimeout(this.timer);
    this.tick();
  }

  /** Claims until every lane is busy or nothing is there to take. */
  fill(): Promise<void> {
    if (this.filling !== null) {
      this.fillAgain = true;
      return this.filling;
    }
    this.filling = this.claimUntilFull().finally(() => {
      this.filling = null;
      // A lane freed (or a nudge came) after the claims in hand found nothing: that lane's next item is
      // claimed now, not at the next full look.
      if (this.fillAgain && !this.stopped) void this.fill();
    });
    return this.filling;
  }

  /**
   * The wake-up stream opened or failed. Either way the counter is read now: a move just before the stream's
   * start is not in the stream, and one while it was failing was not delivered; then the reads go on at the
   * cadence of the new state.
   */
  private streamOpenChanged(open: boolean): void {
    if (open === this.wakeUpStreamOpen) return;
    this.wakeUpStreamOpen = open;
    this.nudge();
  }

  /** The wait before the next counter read: the fast cadence, or the backstop's while the wake-up stream is open. */
  private readEveryMs(): number {
    return this.wakeUpStreamOpen ? Math.max(this.options.signalEveryMs, WAKE_UP_BACKSTOP_MS) : this.options.signalEveryMs;
  }

  private tick(): void {
    this.timer = null;
    this.lookAgain = false;
    this.looking = this.look()
      .catch((error: unknown) => this.options.logger.warn({ err: error }, `${this.options.name}: look failed`))
      .finally(() => {
        this.looking = null;
        if (this.stopped) return;
        this.timer = setTimeout(() => this.tick(), this.lookAgain ? 0 : this.readEveryMs());
        this.timer.unref();
      });
  }

  private async look(): Promise<void> {
    if (this.filling !== null || this.inFlight.size >= this.options.concurrency) return;
    const signal = await this.options.signal().catch(() => null);
    const moved = signal !== null && signal !== this.lastSignal;
    if (signal !== null) this.lastSignal = signal;
    const now = this.now();
    if (this.stopped || (!moved && now < this.idleUntil && now < this.dueAt)) return;
    await this.fill();
  }

  private async claimUntilFull(): Promise<void> {
    this.fillAgain = false;
    if (this.dueAt <= this.now()) this.dueAt = Number.POSITIVE_INFINITY;
    const chains = Math.max(1, Math.min(this.options.claimsAtOnce ?? 1, this.options.concurrency));
    await Promise.all(Array.from({ length: chains }, () => this.claimChain()));
  }

  /** One chain of claims: claims while a lane is free, until a claim finds nothing (then the back-off starts). */
  private async claimChain(): Promise<void> {
    while (!this.stopped && this.inFlight.size + this.claiming < this.options.concurrency) {
      let items: readonly T[] = [];
      this.claiming++;
      try {
        if (this.options.claimSome) items = await this.options.claimSome();
        else {
          const item = await this.options.claim();
          items = item === null ? [] : [item];
        }
      } catch (error) {
        this.options.logger.warn({ err: error }, `${this.options.name}: claim failed`);
      } finally {
        this.claiming--;
      }
      if (items.length === 0) {
        this.idleUntil = this.now() + this.options.idleMs;
        return;
      }
      for (const item of items) this.run(item);
    }
  }

  private run(item: T): void {
    const work: Promise<void> = this.options
      .work(item, this.lane)
      .catch((error: unknown) => this.options.logger.error({ err: error }, `${this.options.name}: work ended on an error`))
      .finally(() => {
        this.inFlight.delete(work);
        // A free lane takes the next item at once, not at the next look.
        if (!this.stopped) void this.fill();
      });
    this.inFlight.add(work);
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleeping.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleeping.add(wake);
    });
  }
}

/** What a queue's task opens over a worker's context: the queue's indexes and its poller (not yet started). */
export interface OpenQueue<T> {
  readonly indexes: Promise<void>;
  readonly poller: QueuePoller<T>;
  /** Frees what the queue's work holds beyond its items (open connections), once the poller has stopped. */
  readonly close?: () => void;
}

/**
 * A worker task over one leased queue: declares the queue's indexes, then polls it until stopped; its stop
 * (SIGTERM) waits for each lane to checkpoint and release what it holds.
 */
export function queueTask<T>(name: string, open: (context: WorkerContext) => OpenQueue<T>): WorkerTask {
  return {
    name,
    start(context) {
      const { indexes, poller, close } = open(context);
      const ready = indexes.catch((error: unknown) => context.logger.warn({ err: error }, `${name}: indexes not declared`));
      void ready.then(() => poller.start());
      return {
        async stop() {
          await ready;
          await poller.stop();
          close?.();
        },
      };
    },
  };
}
