import { afterAll, beforeAll, expect, it } from "vitest";
import { thingsCollection } from "../testutil/storage.js";
import { recordAttempts, writeDeliveries } from "./bookkeeping.js";
import { WEBHOOK_ATTEMPTS_COLLECTION, WEBHOOK_DELIVERIES_COLLECTION, type AttemptDocument, type DeliveryDocument } from "./model.js";

let t: Awaited<ReturnType<typeof thingsCollection>>;
beforeAll(async () => {
  t = await thingsCollection();
});
afterAll(() => t?.close());

const attempt = (id: string, status: "succeeded" | "failed"): AttemptDocument =>
  ({ _id: id, account: "acct_b", livemode: false, event: `evt_${id}`, endpoint: "we_b", status, created: Math.floor(Date.now() / 1000) }) as AttemptDocument;

it("attempts in one insert: an id recorded before keeps its first record, and that is what its item answers", async () => {
  const attempts = t.db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION);
  await recordAttempts(attempts, [attempt("wa_first", "failed")]);
  const answered = await recordAttempts(attempts, [attempt("wa_new1", "succeeded"), attempt("wa_first", "succeeded"), attempt("wa_new2", "succeeded")]);
  expect(answered.map((a) => [a._id, a.status])).toEqual([
    ["wa_new1", "succeeded"],
    ["wa_first", "failed"],
    ["wa_new2", "succeeded"],
  ]);
  expect(await attempts.countDocuments({})).toBe(3);
  expect(answered.every((a) => a.expires_at instanceof Date)).toBe(true);
});

it("releases and deletes in one bulk write, each guarded by its epoch: each item answers whether it applied", async () => {
  const deliveries = t.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
  const leased = (id: string, epoch: number, owner = "me") =>
    ({ _id: id, status: "pending", lease_owner: owner, lease_until: Date.now() + 60_000, epoch }) as unknown as DeliveryDocument;
  await deliveries.insertMany([leased("d-release", 3), leased("d-delete", 2), leased("d-taken", 5, "other"), leased("d-gone-delete", 1, "other")]);
  const held = await writeDeliveries(deliveries, "me", [
    { kind: "release", id: "d-release", epoch: 3, set: { due_at: 42 } },
    { kind: "delete", id: "d-delete", epoch: 2 },
    // Taken over by another worker at a later epoch: neither applies.
    { kind: "release", id: "d-taken", epoch: 4, set: { due_at: 1 } },
    { kind: "delete", id: "d-gone-delete", epoch: 0 },
  ]);
  expect(held).toEqual([true, true, false, false]);
  expect(await deliveries.findOne({ _id: "d-release" })).toMatchObject({ due_at: 42, lease_owner: null, lease_until: null, released_epoch: 3 });
  expect(await deliveries.findOne({ _id: "d-delete" })).toBeNull();
  expect(await deliveries.findOne({ _id: "d-taken" })).toMatchObject({ lease_owner: "other", epoch: 5 });
  expect(await deliveries.findOne({ _id: "d-gone-delete" })).not.toBeNull();
});
