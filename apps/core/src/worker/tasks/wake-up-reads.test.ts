// The queue counters' reads over the real database: an idle worker whose wake-up streams are open reads them
// only as a backstop, a poller whose stream the server refuses reads them at the fast cadence, and work queued
// while a worker is idle is still claimed.
import { eventually } from "@rms/test-db/testkit";
import { pino } from "pino";
import { expect, inject, it } from "vitest";
import type { Tenant } from "../../caller.js";
import { QueueSignal } from "../../storage/queue-signal.js";
import { useTestDatabase } from "../../testutil/database.js";
import { jobOf, jobsWorker, queueJob } from "../../testutil/jobs.js";
import { startWorker } from "../run.js";
import { DELIVERY_POLL_MS, deliveryTask } from "./deliveries.js";
import { SIGNAL_POLL_MS, jobsTask } from "./jobs.js";
import { QueuePoller, WAKE_UP_BACKSTOP_MS } from "./poller.js";

const { db, databaseName } = useTestDatabase("wake-up-reads");
const logger = pino({ level: "silent" });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Time for a started worker's first look and for its streams to open, generous for a busy machine. */
const SETTLE_MS = 3_000;
const WINDOW_MS = 5_000;

/** The server's count of finds on one of this database's collections (the `top` command: every client's). */
async function findsOn(collection: string): Promise<number> {
  const { totals } = await db.admin().command({ top: 1 });
  return (totals[`${databaseName}.${collection}`]?.queries?.count as number | undefined) ?? 0;
}

it("an idle worker whose wake-up streams are open reads each queue's counter at the backstop cadence, not the fast one", async () => {
  const worker = await startWorker({ mongoUri: inject("mongoUri"), databaseName, tasks: [jobsTask(), deliveryTask()] });
  try {
    await sleep(SETTLE_MS);
    // The counters' documents (jobs/model.ts JOBS_QUEUE, webhook-deliveries/model.ts DELIVERY_QUEUE).
    const before = { jobs: await findsOn("jobs_queue"), deliveries: await findsOn("webhook_queue") };
    await sleep(WINDOW_MS);
    const reads = { jobs: (await findsOn("jobs_queue")) - before.jobs, deliveries: (await findsOn("webhook_queue")) - before.deliveries };
    const perSecond = (n: number) => ((n * 1_000) / WINDOW_MS).toFixed(1);
    process.stderr.write(
      `idle worker, streams open: ${perSecond(reads.jobs)} jobs counter reads/s (${1_000 / SIGNAL_POLL_MS} at the fast cadence), ` +
        `${perSecond(reads.deliveries)} deliveries counter reads/s (${1_000 / DELIVERY_POLL_MS}); backstop ${WAKE_UP_BACKSTOP_MS} ms\n`,
    );
    // A busy machine fires timers late (fewer reads, never more): at most a third of the fast cadence's, and some.
    expect(reads.jobs).toBeLessThanOrEqual(WINDOW_MS / SIGNAL_POLL_MS / 3);
    expect(reads.deliveries).toBeLessThanOrEqual(WINDOW_MS / DELIVERY_POLL_MS / 3);
    expect(reads.jobs).toBeGreaterThan(0);
    expect(reads.deliveries).toBeGreaterThan(0);
  } finally {
    await worker.stop();
  }
});

// The wake-up and the backstop read both find the move here (a bound on the latency would be a timing threshold): what
// this shows is that an idle worker with full looks a minute apart claims at once; that the stream itself wakes a
// watcher is storage/queue-signal.test.ts's, and that a wake-up makes the poller look is poller.test.ts's.
it(
  "a job queued while the worker is idle is claimed long before its next " + "full look (a minute away): by the wake-up, or at worst the backstop read",
  async () => {
    const tenant: Tenant = { account: `acct_wakeups${process.pid}`, livemode: false };
    const worker = await jobsWorker(databaseName, { pollMs: 60_000 });
    try {
      await sleep(SETTLE_MS);
      const id = await queueJob(db, tenant, { type: "resources.import", params: { items: [{ name: "woken" }] } });
      const createdAt = Date.now();
      await eventually(async () => expect((await jobOf(db, id))?.started_at).toBeTruthy(), { timeoutMs: 20_000, intervalMs: 5 });
      process.stderr.write(`job claimed ${Date.now() - createdAt} ms after its create returned (backstop reads every ${WAKE_UP_BACKSTOP_MS} ms)\n`);
    } finally {
      await worker.stop();
    }
  },
);

it("a poller whose wake-up stream the server refuses reads its counter at the fast cadence; beside it, one whose stream is open does not", async () => {
  /** A poller over a queue counter of `on` that counts its reads; nothing to claim. */
  const poller = (on: typeof db) => {
    const queue = new QueueSignal("wake_up_reads", "work");
    const counted = { reads: 0 };
    const started = new QueuePoller<never>({
      name: "wake-up-reads",
      logger,
      concurrency: 1,
      claim: async () => null,
      work: async () => {},
      signal: () => {
        counted.reads++;
        return queue.read(on);
      },
      wakeUps: (wake, streamOpen) => queue.watch(on, wake, logger, streamOpen),
      signalEveryMs: SIGNAL_POLL_MS,
      idleMs: 60_000,
    });
    started.start();
    return { started, counted };
  };
  // The local database has no change streams: the server refuses each one the watch opens.
  const refused = poller(db.client.db("local"));
  const open = poller(db);
  try {
    await sleep(SETTLE_MS);
    const before = { refused: refused.counted.reads, open: open.counted.reads };
    await sleep(WINDOW_MS);
    const reads = { refused: refused.counted.reads - before.refused, open: open.counted.reads - before.open };
    process.stderr.write(
      `in ${WINDOW_MS} ms: ${reads.refused} counter reads with the stream refused, ${reads.open} with it open ` +
        `(${WINDOW_MS / SIGNAL_POLL_MS} at the fast cadence, ${WINDOW_MS / WAKE_UP_BACKSTOP_MS} at the backstop's)\n`,
    );
    expect(reads.refused).toBeGreaterThan((2 * WINDOW_MS) / WAKE_UP_BACKSTOP_MS);
    expect(reads.open).toBeLessThanOrEqual(WINDOW_MS / SIGNAL_POLL_MS / 3);
  } finally {
    await Promise.all([refused.started.stop(), open.started.stop()]);
  }
});
