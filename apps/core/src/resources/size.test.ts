import { eventually } from "@rms/test-db/testkit";
import { BSON } from "mongodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestCore, type TestCore } from "../testutil/harness.js";
import type { ResourceDocument } from "./model.js";

// The size rule of issue 13: a resource updated 10,000 times keeps a document no larger than twice its
// size after its first update, because nothing of its history stays in it (the relay, running as in
// production, empties the outbox behind the writes). Sizes are compared with the outbox drained: how many
// events wait at one instant depends on the machine's load, not on the number of updates (docs/events.md).
// The time per update, first 500 against last 500, is in the bench (bench/src/depth.mjs).
const UPDATES = 10_000;
const CHECK_EVERY = 1_000;

let t: TestCore;
beforeAll(async () => {
  t = await startTestCore({ relay: true });
}, 60_000);
afterAll(() => t?.stop());

it("a resource updated 10,000 times keeps its document within twice its size after the first update; every update's event is relayed", async () => {
  const account = await t.newAccount();
  const { resource } = await t.resources.createResource({ tenant: account.test, name: "often updated" });
  const id = resource!.id;
  const resources = t.db.collection<ResourceDocument>("resources");
  /** The whole stored document, outbox included, once the relay has emptied the outbox. */
  const drainedSize = async () => {
    await eventually(async () => expect((await resources.findOne({ _id: id }))!.pending_events).toEqual([]));
    return BSON.calculateObjectSize((await resources.findOne({ _id: id }))!);
  };
  const update = (n: number) => t.resources.updateResource({ tenant: account.test, id, metadata: [{ key: "n", value: String(n) }] });

  await update(1);
  const first = await drainedSize();
  for (let n = 2; n <= UPDATES; n++) {
    await update(n);
    if (n % CHECK_EVERY === 0) expect(await drainedSize()).toBeLessThanOrEqual(2 * first);
  }

  const doc = (await resources.findOne({ _id: id }))!;
  expect(doc.version).toBe(UPDATES);
  expect(doc.metadata).toEqual([{ k: "n", v: String(UPDATES) }]);
  await eventually(async () => expect(await t.db.collection("events").countDocuments({ "object.id": id })).toBe(UPDATES + 1));
}, 600_000);
