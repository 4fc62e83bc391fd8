import { eventually, startTcpRelay } from "@rms/test-db/testkit";
import { pino } from "pino";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { thingsCollection } from "../testutil/storage.js";
import { openClient } from "./client-options.js";
import { QueueSignal } from "./queue-signal.js";

let t: Awaited<ReturnType<typeof thingsCollection>>;
beforeAll(async () => {
  t = await thingsCollection();
});
afterAll(() => t.close());

const logger = pino({ level: "silent" });

/** The value once it stopped changing for 500 ms (changes already sent arrive late on a busy machine). */
async function settled(read: () => number): Promise<number> {
  for (;;) {
    const seen = read();
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (read() === seen) return seen;
  }
}

/** Watches `signal` on `db`, counting its wake-ups and keeping its state reports in order. */
function watching(signal: QueueSignal, db = t.db) {
  const seen = { moves: 0, reports: [] as boolean[] };
  const stop = signal.watch(
    db,
    () => seen.moves++,
    logger,
    (open) => seen.reports.push(open),
  );
  return { seen, stop };
}

it(
  "watch: each signal wakes the watcher (core's client, read concern local); a stream the server closes (the collection dropped) is opened again, and " +
    "reports it",
  async () => {
    const signal = new QueueSignal("test_queue", "work");
    const { seen, stop } = watching(signal);
    try {
      // The stream opens in the background: signal until one is seen.
      await eventually(async () => {
        await signal.signal(t.db);
        expect(seen.moves).toBeGreaterThan(0);
      });
      // The server closes the stream (invalidate); the watch opens another and wakes on the next signals.
      await t.db.collection("test_queue").drop();
      const before = seen.moves;
      await eventually(
        async () => {
          await signal.signal(t.db);
          expect(seen.moves).toBeGreaterThan(before);
        },
        { timeoutMs: 15_000, intervalMs: 200 },
      );
      // The retries above may still have changes in flight: wait until none arrives for 500 ms, then another
      // queue's counter must wake nobody here.
      // Open, closed by the drop, open again: each change of state reported once.
      expect(seen.reports.slice(0, 3)).toEqual([true, false, true]);
      const after = await settled(() => seen.moves);
      await new QueueSignal("test_queue", "other").signal(t.db, 5);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(seen.moves).toBe(after);
    } finally {
      await stop();
    }
    // Stopped: signals wake nothing.
    const stopped = await settled(() => seen.moves);
    await signal.signal(t.db);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen.moves).toBe(stopped);
  },
);

it("streamOpen: reported once the server has established the stream's cursor, so a single signal right after it wakes the watcher", async () => {
  // Several fresh streams: a report made before the cursor existed would lose some of these single signals.
  for (let round = 0; round < 5; round++) {
    const signal = new QueueSignal("test_queue_open", `round${round}`);
    const { seen, stop } = watching(signal);
    try {
      expect(seen.reports).toEqual([]); // the driver has not even sent the stream's aggregate yet
      await eventually(() => expect(seen.reports).toEqual([true]));
      await signal.signal(t.db);
      await eventually(() => expect(seen.moves).toBe(1));
    } finally {
      await stop();
    }
  }
});

it("streamOpen: a stream the server refuses (the local database has none) is never reported open", async () => {
  const local = t.db.client.db("local");
  const { seen, stop } = watching(new QueueSignal("test_queue_refused", "work"), local);
  try {
    // Long enough for the first stream's refusal and a reopen after it (REOPEN_AFTER_MS).
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(seen.reports).not.toContain(true);
  } finally {
    await stop();
  }
});

it("watch: a stream the driver resumes after a network error stays the only one (each signal wakes once), and stop closes it", async () => {
  // A TCP relay in front of the test's mongod, cut and restored: the stream's getMore fails with a network error,
  // which the driver resumes by itself on the same ChangeStream (after closing its cursor: a `close` event).
  const relay = await startTcpRelay(inject("mongoUri"));
  const client = await openClient(relay.uri).connect();
  const signal = new QueueSignal("test_queue_resumed", "work");
  const { seen, stop } = watching(signal, client.db(t.db.databaseName));
  const streamsOnServer = async () =>
    (
      await t.db.client
        .db("admin")
        .aggregate([{ $currentOp: { allUsers: true, idleCursors: true } }, { $match: { ns: `${t.db.databaseName}.test_queue_resumed` } }])
        .toArray()
    ).length;
  try {
    await eventually(async () => {
      await signal.signal(t.db);
      expect(seen.moves).toBeGreaterThan(0);
    });
    await relay.cut();
    await relay.restore();
    // Resumed (or opened again): signals wake the watcher again.
    await eventually(
      async () => {
        const before = seen.moves;
        await signal.signal(t.db);
        await eventually(() => expect(seen.moves).toBeGreaterThan(before), { timeoutMs: 1_000 });
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    // Past the reopen delay: one signal, one wake-up (two streams would wake the watcher twice), one stream on the server.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const settledMoves = await settled(() => seen.moves);
    await signal.signal(t.db);
    await eventually(() => expect(seen.moves).toBeGreaterThan(settledMoves));
    expect(await settled(() => seen.moves)).toBe(settledMoves + 1);
    expect(await streamsOnServer()).toBe(1);
  } finally {
    await stop();
  }
  // Stopped: no stream of it is left on the server.
  await eventually(async () => expect(await streamsOnServer()).toBe(0));
  await client.close();
  await relay.close();
});
