import type {} from "@rms/test-db/vitest-setup";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestCore, type TestCore } from "./testutil/harness.js";

let t: TestCore;
beforeAll(async () => {
  t = await startTestCore();
});
afterAll(() => t.stop());

/** Each index of a collection by name: its keys, and its TTL, uniqueness and partial filter where it has one. */
async function indexesOf(collection: string): Promise<Record<string, unknown>> {
  const indexes = await t.db.collection(collection).indexes();
  return Object.fromEntries(
    indexes.map((index) => [
      index.name,
      {
        key: index.key,
        ...(index.expireAfterSeconds !== undefined ? { expireAfterSeconds: index.expireAfterSeconds } : {}),
        ...(index.unique ? { unique: true } : {}),
        ...(index.partialFilterExpression ? { partial: index.partialFilterExpression } : {}),
      },
    ]),
  );
}

const LIVE = { deleted: { $eq: null } };
const TTL = { key: { expires_at: 1 }, expireAfterSeconds: 0, partial: { expires_at: { $type: "date" } } };
const OUTBOX = { key: { "pending_events._id": 1 }, partial: { "pending_events._id": { $exists: true } } };

it("core declares every index at start (TTL indexes for retention, partial ones for the queues and outboxes included), on every database", async () => {
  expect(await indexesOf("resources")).toEqual({
    _id_: { key: { _id: 1 } },
    // No unique key slot (issue 30): a keyed create commits with its key's record, which decides exactly once.
    // The filter's indexes hold live resources only (issue 31: a page never walks tombstones).
    live_status_order: { key: { account: 1, livemode: 1, status: 1, _id: -1 }, partial: LIVE },
    live_metadata_status_order: { key: { account: 1, livemode: 1, "metadata.k": 1, "metadata.v": 1, status: 1, _id: -1 }, partial: LIVE },
    live_name_status_order: { key: { account: 1, livemode: 1, name_prefixes: 1, status: 1, _id: -1 }, partial: LIVE },
    expires_at_ttl: TTL,
    pending_events: OUTBOX,
  });
  expect(await indexesOf("api_keys")).toEqual({
    _id_: { key: { _id: 1 } },
    hash_unique: { key: { hash: 1 }, unique: true },
    account_keys: { key: { account: 1, _id: -1 } },
    // GET /v1/api_keys: a tenant's keys of one mode, newest first.
    tenant_keys: { key: { account: 1, livemode: 1, _id: -1 } },
  });
  expect(await indexesOf("events")).toMatchObject({ expires_at_ttl: TTL });
  expect(await indexesOf("jobs")).toMatchObject({
    expires_at_ttl: TTL,
    pending_events: OUTBOX,
    // JOBS_QUEUED_PER_ACCOUNT's places (jobs/queue-limit.ts): only the unfinished jobs hold one.
    tenant_queue_slot_unique: { key: { account: 1, livemode: 1, queue_slot: 1 }, unique: true, partial: { queue_slot: { $exists: true } } },
  });
  expect(await indexesOf("job_errors")).toMatchObject({ expires_at_ttl: TTL });
  expect(await indexesOf("webhook_deliveries")).toMatchObject({
    expires_at_ttl: TTL,
    pending_due: { key: { status: 1, due_at: 1 }, partial: { status: "pending" } },
  });
  expect(await indexesOf("webhook_attempts")).toMatchObject({ expires_at_ttl: TTL });
});
