import type {} from "@rms/test-db/vitest-setup";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { usesSecondaryIndexes } from "@rms/db-engine";
import { startTestCore, type TestCore } from "./testutil/harness.js";

let t: TestCore;
beforeAll(async () => {
  t = await startTestCore();
});
afterAll(() => t.stop());

const names = async (collection: string): Promise<string[]> => (await t.db.collection(collection).indexes()).map((index) => index.name!).sort();

it("core declares its unique indexes everywhere and the non-unique ones only on engines that use them", async () => {
  const secondary = inject("mongoEngine") !== "mongo-java-server";
  expect(await usesSecondaryIndexes(t.db)).toBe(secondary);
  expect(await names("resources")).toEqual([
    "_id_",
    ...(secondary ? [] : ["id_version"]),
    "idempotency_unique",
    "pending_events",
    ...(secondary ? ["tenant_metadata_order", "tenant_order", "tenant_status_order"] : []),
    "tombstones",
  ]);
  expect(await names("api_keys")).toEqual(["_id_", ...(secondary ? ["account_keys"] : []), "hash_unique"]);
});
