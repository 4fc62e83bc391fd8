import { eventually } from "@rms/test-db/testkit";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { QueuePoller, WAKE_UP_BACKSTOP_MS, type Lane, type PollerOptions } from "./poller.js";

const IDLE_MS = 60_000;

/**
 * A queue in memory: `queue` adds items and moves the counter as a producer does, `sneak` adds them without
 * a signal (a lost one, an expired lease). Each item's work runs until the test lets it finish.
 */
function fakeQueue() {
  const state = {
    items: [] as string[],
    counter: 0,
    claims: 0,
    signalReads: 0,
    failClaims: false,
    /**
     * While set, each claim waits for it before it answers what it took when it began (as a database claim
     * answers what its read found): claims then overlap, and `mostClaimsAtOnce` shows how many.
     */
    claimGate: null as Promise<void> | null,
    /** While set, each counter read answers the counter as it stood when the read began, once this resolves. */
    signalGate: null as Promise<void> | null,
    claimsNow: 0,
    mostClaimsAtOnce: 0,
    started: [] as string[],
    lanes: new Map<string, Lane>(),
    finish: new Map<string, () => void>(),
  };
  return {
    state,
    queue(...ids: string[]) {
      state.items.push(...ids);
      state.counter++;
    },
    sneak(...ids: string[]) {
      state.items.push(...ids);
    },
    async claim(): Promise<string | null> {
      state.claims++;
      state.claimsNow++;
      state.mostClaimsAtOnce = Math.max(state.mostClaimsAtOnce, state.claimsNow);
      const failing = state.failClaims;
      const taken = failing ? undefined : state.items.shift();
      await state.claimGate;
      state.claimsNow--;
      if (failing) throw new Error("the database is away");
      return taken ?? null;
    },
    async signal(): Promise<number> {
      state.signalReads++;
      const counter = state.counter;
      await state.signalGate;
      return counter;
    },
    work(item: string, lane: Lane): Promise<void> {
      state.started.push(item);
      state.lanes.set(item, lane);
      return new Promise<void>((resolve) => state.finish.set(item, resolve));
    },
  };
}

const pollers: { poller: QueuePoller<string>; q: ReturnType<typeof fakeQueue> }[] = [];
afterEach(async () => {
  for (const { q } of pollers) for (const finish of q.state.finish.values()) finish();
  await Promise.all(pollers.splice(0).map(({ poller }) => poller.stop()));
});

/** A started poller over the fake queue, reading the counter every 5 ms on a clock the test moves. */
function poll(q: ReturnType<typeof fakeQueue>, options: Partial<PollerOptions<string>> = {}) {
  const clock = { now: 1_000_000 };
  const poller = new QueuePoller<string>({
    name: "test",
    logger: pino({ level: "silent" }),
    concurrency: 2,
    claim: () => q.claim(),
    work: (item, lane) => q.work(item, lane),
    signal: () => q.signal(),
    signalEveryMs: 5,
    idleMs: IDLE_MS,
    now: () => clock.now,
    ...options,
  });
  pollers.push({ poller, q });
  poller.start();
  return { poller, clock };
}

/** A wake-up stream the test drives: `wake` as a change on the counter would, `open` as the stream reports its state. */
function fakeWakeUps() {
  const stream = { wake: () => {}, open: (_open: boolean) => {} };
  const wakeUps: PollerOptions<string>["wakeUps"] = (wake, streamOpen) => {
    stream.wake = wake;
    stream.open = streamOpen;
    return async () => {};
  };
  return { stream, wakeUps };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Lets the poller read the counter a few more times (it looks every 5 ms), so that what it did not do is seen. */
async function someLooks(q: ReturnType<typeof fakeQueue>): Promise<void> {
  const before = q.state.signalReads;
  await eventually(() => expect(q.state.signalReads).toBeGreaterThanOrEqual(before + 5));
}

describe("the leased-queue poller", () => {
  it("claims at start until every lane is busy; a lane that frees claims the next item at once, without a signal", async () => {
    const q = fakeQueue();
    q.queue("a", "b", "c");
    poll(q);
    await eventually(() => expect(q.state.started).toEqual(["a", "b"]));
    expect(q.state.claims).toBe(2); // full: no third claim
    q.state.finish.get("a")!();
    await eventually(() => expect(q.state.started).toEqual(["a", "b", "c"]));
    expect(q.state.claims).toBe(3);
  });

  it("idle, it reads only the counter, and claims as soon as the counter moves", async () => {
    const q = fakeQueue();
    poll(q);
    await eventually(() => expect(q.state.claims).toBe(1));
    await someLooks(q);
    expect(q.state.claims).toBe(1);
    q.queue("x");
    await eventually(() => expect(q.state.started).toEqual(["x"]));
  });

  it("backs off: work that comes without a signal is claimed once idleMs has passed, not before", async () => {
    const q = fakeQueue();
    const { clock } = poll(q);
    await eventually(() => expect(q.state.claims).toBe(1));
    q.sneak("expired-lease");
    await someLooks(q);
    clock.now += IDLE_MS - 1;
    await someLooks(q);
    expect(q.state.claims).toBe(1);
    clock.now += 1;
    await eventually(() => expect(q.state.started).toEqual(["expired-lease"]));
  });

  it("a claim that fails backs off as one that found nothing (no claim in a loop while the database is away)", async () => {
    const q = fakeQueue();
    q.state.failClaims = true;
    const { clock } = poll(q);
    await eventually(() => expect(q.state.claims).toBe(1));
    await someLooks(q);
    expect(q.state.claims).toBe(1);
    q.state.failClaims = false;
    q.sneak("after-the-outage");
    clock.now += IDLE_MS;
    await eventually(() => expect(q.state.started).toEqual(["after-the-outage"]));
  });

  it("claims at the time work asked to be looked at again (lookAgainAt), without a signal", async () => {
    const q = fakeQueue();
    const { poller, clock } = poll(q);
    await eventually(() => expect(q.state.claims).toBe(1));
    poller.lookAgainAt(clock.now + 500);
    q.sneak("retry");
    await someLooks(q);
    expect(q.state.claims).toBe(1);
    clock.now += 500;
    await eventually(() => expect(q.state.started).toEqual(["retry"]));
  });

  it("claimsAtOnce: claims overlap up to that many, and claims and work in hand never exceed the lanes", async () => {
    const q = fakeQueue();
    q.queue("a", "b", "c", "d", "e", "f");
    let open!: () => void;
    q.state.claimGate = new Promise((resolve) => (open = resolve));
    poll(q, { concurrency: 5, claimsAtOnce: 3 });
    await eventually(() => expect(q.state.claimsNow).toBe(3));
    open();
    await eventually(() => expect(q.state.started).toEqual(["a", "b", "c", "d", "e"]));
    expect(q.state.mostClaimsAtOnce).toBe(3);
    expect(q.state.claims).toBe(5); // five lanes, five claims: none beyond the lanes
  });

  it("nudge: looks at once instead of at the next counter read, and claims when the counter moved", async () => {
    const q = fakeQueue();
    const { poller } = poll(q, { signalEveryMs: 60_000 });
    await eventually(() => expect(q.state.claims).toBe(1));
    const reads = q.state.signalReads;
    q.queue("x");
    poller.nudge();
    await eventually(() => expect(q.state.started).toEqual(["x"]));
    expect(q.state.signalReads).toBe(reads + 1);
  });

  it(
    "counter reads: every signalEveryMs while the wake-up stream is not open, every WAKE_UP_BACKSTOP_MS while it is, every signalEveryMs again once " +
      "it failed",
    async () => {
      const q = fakeQueue();
      const { stream, wakeUps } = fakeWakeUps();
      const EVERY_MS = 20;
      poll(q, { signalEveryMs: EVERY_MS, wakeUps });
      const WINDOW_MS = 2_000;
      const readsOver = async () => {
        const before = q.state.signalReads;
        await sleep(WINDOW_MS);
        return q.state.signalReads - before;
      };
      const notYetOpen = await readsOver();
      stream.open(true);
      const open = await readsOver();
      stream.open(false);
      const failed = await readsOver();
      process.stderr.write(
        `counter reads in ${WINDOW_MS} ms: ${notYetOpen} before the stream opened, ${open} while open, ${failed} after it failed ` +
          `(cadences ${EVERY_MS} ms and ${WAKE_UP_BACKSTOP_MS} ms: ${WINDOW_MS / EVERY_MS} and ${WINDOW_MS / WAKE_UP_BACKSTOP_MS})\n`,
      );
      // Generous bounds (a busy machine fires timers late, so it reads less, never more): open, at most a third of
      // the fast cadence's reads, and some (the backstop goes on); not open, more than twice the backstop's.
      expect(open).toBeLessThanOrEqual(WINDOW_MS / EVERY_MS / 3);
      expect(open).toBeGreaterThan(0);
      expect(notYetOpen).toBeGreaterThan((2 * WINDOW_MS) / WAKE_UP_BACKSTOP_MS);
      expect(failed).toBeGreaterThan((2 * WINDOW_MS) / WAKE_UP_BACKSTOP_MS);
    },
  );

  it("the stream's open and its failure each read the counter at once: a move the stream did not see is claimed then, not at the next read", async () => {
    const q = fakeQueue();
    const { stream, wakeUps } = fakeWakeUps();
    // Counter reads a minute apart: only the reads on the stream's changes of state can find these.
    poll(q, { signalEveryMs: 60_000, wakeUps });
    await eventually(() => expect(q.state.claims).toBe(1));
    q.queue("before-the-stream"); // moved before the stream's cursor existed: no wake-up for it
    stream.open(true);
    await eventually(() => expect(q.state.started).toEqual(["before-the-stream"]));
    q.queue("while-it-failed"); // moved while the stream was failing: its change never came
    stream.open(false);
    await eventually(() => expect(q.state.started).toEqual(["before-the-stream", "while-it-failed"]));
  });

  it("a wake-up that comes while a look's counter read is in flight is not lost: another look follows at once", async () => {
    const q = fakeQueue();
    const { stream, wakeUps } = fakeWakeUps();
    poll(q, { signalEveryMs: 60_000, wakeUps });
    stream.open(true);
    await eventually(() => expect(q.state.claims).toBe(1));
    await eventually(() => expect(q.state.signalReads).toBe(2)); // the read on the open
    let answer!: () => void;
    q.state.signalGate = new Promise((resolve) => (answer = resolve));
    stream.wake(); // a look whose read answers the counter as it stands now, before the move
    await eventually(() => expect(q.state.signalReads).toBe(3));
    q.queue("x");
    stream.wake(); // the move's wake-up, while that read is in flight
    q.state.signalGate = null;
    answer();
    await eventually(() => expect(q.state.started).toEqual(["x"]));
  });

  it("a lane freed while the claims in hand find nothing is filled again at once, not at the next look", async () => {
    const q = fakeQueue();
    q.queue("a", "b");
    poll(q, { concurrency: 2, signalEveryMs: 60_000 });
    await eventually(() => expect(q.state.started).toEqual(["a", "b"]));
    // "a" ends: the fill it starts claims and finds nothing, but answers only at the gate. Meanwhile "b" ends
    // and "c" is queued without a signal (counter reads are a minute apart): the fill "b" asked for follows.
    let open!: () => void;
    q.state.claimGate = new Promise((resolve) => (open = resolve));
    q.state.finish.get("a")!();
    await eventually(() => expect(q.state.claimsNow).toBe(1));
    q.state.finish.get("b")!();
    q.sneak("c");
    q.state.claimGate = null;
    open();
    await eventually(() => expect(q.state.started).toEqual(["a", "b", "c"]));
  });

  it("stop: ends the sleeps in hand at once, lets each lane see it is stopping, waits for the work in hand, and claims nothing more", async () => {
    const q = fakeQueue();
    q.queue("sleeper", "busy", "never");
    const { poller } = poll(q);
    await eventually(() => expect(q.state.started).toEqual(["sleeper", "busy"]));
    const lane = q.state.lanes.get("sleeper")!;
    expect(lane.stopping()).toBe(false);
    const slept = lane.sleep(IDLE_MS).then(() => lane.stopping());

    let stopped = false;
    const stopping = poller.stop().then(() => {
      stopped = true;
    });
    expect(await slept).toBe(true);
    await lane.sleep(IDLE_MS); // a sleep asked for while stopping ends at once too
    q.state.finish.get("sleeper")!();
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false); // "busy" is still in hand
    q.state.finish.get("busy")!();
    await stopping;
    expect(q.state.started).toEqual(["sleeper", "busy"]);
    expect(q.state.claims).toBe(2);
  });
});
