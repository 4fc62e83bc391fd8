import type { ChangeStream, Db } from "mongodb";
import type { Logger } from "pino";

/** How long a watch whose change stream failed waits before it opens another (the counter reads go on meanwhile). */
const REOPEN_AFTER_MS = 1_000;

/**
 * A queue's wake-up counter (docs/architecture.md, "Wake-up counters"): one document by `_id` that a
 * producer `$inc`s after queuing work and idle workers read (every few ms, or as the backstop of `watch`),
 * claiming at once when it moved instead of at their next full look. Losing a signal (a slow database, two
 * first upserts racing on the duplicate key) costs one full look of latency: the work is queued all the same.
 */
export class QueueSignal {
  constructor(
    private readonly collection: string,
    private readonly id: string,
  ) {}

  /** Tells idle workers that `count` items were queued; never fails. */
  async signal(db: Db, count = 1): Promise<void> {
    try {
      await db
        .collection<{ _id: string; queued: number }>(this.collection)
        .updateOne({ _id: this.id }, { $inc: { queued: count } }, { upsert: true, timeoutMS: 5_000 });
    } catch {
      // Workers find the work by their periodic look.
    }
  }

  /**
   * Calls `moved` each time the counter moves, from a change stream on its document: the wake-up that cuts
   * the latency of an idle worker's counter reads (ARCHITECTURE: a change stream as a wake-up signal, never
   * the only record of work; the reads go on). A stream that fails or is closed by the server (an election the
   * driver cannot resume across, a dropped collection) is opened again after REOPEN_AFTER_MS. Returns the stop,
   * which closes the stream.
   *
   * `streamOpen` is told each time the stream's state changes: true once the server has established its cursor
   * (every move from then on reaches `moved`), false when it fails, closes or is being opened again. It starts
   * false: the driver sends the stream's `aggregate` only after `watch` returns, and a move before the cursor
   * exists is never seen by it.
   */
  watch(db: Db, moved: () => void, logger: Logger, streamOpen: (open: boolean) => void = () => {}): () => Promise<void> {
    let stream: ChangeStream | null = null;
    let stopped = false;
    let reopen: NodeJS.Timeout | null = null;
    // One warning per run of failures (a stream that fails to open is opened again every second).
    let warned = false;
    let reportedOpen = false;
    const report = (from: ChangeStream, open: boolean) => {
      // A stream replaced by another (or stopped) reports nothing.
      if (stopped || stream !== from || reportedOpen === open) return;
      reportedOpen = open;
      streamOpen(open);
    };
    // A resume still under way (waiting for a primary) would make the stream a new cursor later: without a `change`
    // listener the driver never starts it, and close() ends the stream for good.
    const abandon = (from: ChangeStream) => {
      from.removeAllListeners("change");
      void from.close().catch(() => undefined);
    };
    const open = () => {
      if (stopped) return;
      // A change stream reads at majority whatever the client's read concern (core's is `local`).
      const opened = db.collection(this.collection, { readConcern: { level: "majority" } }).watch([{ $match: { "documentKey._id": this.id } }]);
      stream = opened;
      opened.on("change", () => {
        warned = false;
        report(opened, true);
        moved();
      });
      // The driver sets a resume token from the server's first answer (the `aggregate` that established the
      // cursor, its postBatchResumeToken) and from each later one: the first proves the stream open.
      opened.on("resumeTokenChanged", () => report(opened, true));
      opened.on("error", (error: unknown) => {
        // An abandoned stream (below) may still report its resume's failure: it belongs to no watch now.
        if (stopped || stream !== opened) return;
        report(opened, false);
        if (!warned) logger.warn({ err: error, queue: this.id }, "queue wake-up stream failed; the counter reads go on, and it is opened again");
        warned = true;
        void opened.close().catch(() => undefined);
      });
      // Closed by a failure, or by the server (an invalidate: the collection dropped or renamed): opened again. The
      // driver also closes a stream's cursor before it resumes the same stream on a new one (a network error, an
      // election): still open by then, it is kept, so one stream per watch stays (a second would wake twice).
      opened.on("close", () => {
        report(opened, false);
        if (stopped || stream !== opened || reopen !== null) return;
        reopen = setTimeout(() => {
          reopen = null;
          if (stopped || stream !== opened || !opened.closed) return;
          abandon(opened);
          open();
        }, REOPEN_AFTER_MS);
        reopen.unref();
      });
    };
    open();
    return async () => {
      stopped = true;
      if (reopen) clearTimeout(reopen);
      await (stream as ChangeStream | null)?.close().catch(() => undefined);
    };
  }

  /** The counter now (0 before the first signal). */
  async read(db: Db): Promise<number> {
    return (await db.collection<{ _id: string; queued: number }>(this.collection).findOne({ _id: this.id }))?.queued ?? 0;
  }
}
