import { eventually } from "@rms/test-db/testkit";
import { pino } from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { thingsCollection } from "../testutil/storage.js";
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

it("watch: each signal wakes the watcher (core's client, read concern local); a stream the server closes (the collection dropped) is opened again", async () => {
  const signal = new QueueSignal("test_queue", "work");
  let moves = 0;
  const stop = signal.watch(t.db, () => moves++, logger);
  try {
    // The stream opens in the background: signal until one is seen.
    await eventually(async () => {
      await signal.signal(t.db);
      expect(moves).toBeGreaterThan(0);
    });
    // The server closes the stream (invalidate); the watch opens another and wakes on the next signals.
    await t.db.collection("test_queue").drop();
    const before = moves;
    await eventually(
      async () => {
        await signal.signal(t.db);
        expect(moves).toBeGreaterThan(before);
      },
      { timeoutMs: 15_000, intervalMs: 200 },
    );
    // The retries above may still have changes in flight: wait until none arrives for 500 ms, then another
    // queue's counter must wake nobody here.
    const after = await settled(() => moves);
    await new QueueSignal("test_queue", "other").signal(t.db, 5);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(moves).toBe(after);
  } finally {
    await stop();
  }
  // Stopped: signals wake nothing.
  const stopped = await settled(() => moves);
  await signal.signal(t.db);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(moves).toBe(stopped);
});
