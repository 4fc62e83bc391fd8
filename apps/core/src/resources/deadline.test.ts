import { afterAll, beforeAll, expect, it } from "vitest";
import { DEADLINE_MARGIN_MS } from "../budget.js";
import { startTestCore, type TestCore } from "../testutil/harness.js";

let t: TestCore;
beforeAll(async () => {
  t = await startTestCore();
});
afterAll(() => t.stop());

it("a call whose deadline leaves core no budget is refused by core itself (UNAVAILABLE with its detail) and writes nothing", async () => {
  const { test: tenant } = await t.newAccount();
  const { resource } = await t.resources.createResource({ tenant, name: "kept" });
  const short = { timeoutMs: DEADLINE_MARGIN_MS / 2 };
  for (const call of [
    () => t.resources.updateResource({ tenant, id: resource!.id, name: "changed" }, short),
    () => t.resources.deleteResource({ tenant, id: resource!.id }, short),
    () => t.resources.createResource({ tenant, name: "never" }, short),
  ]) {
    // Core's answer (a TransportError from the client library would be a deadline it missed).
    await expect(call()).rejects.toMatchObject({ name: "RpcError", code: "service_unavailable", grpcCode: 14 });
  }
  const stored = await t.db.collection("resources").find({ account: tenant.accountId }).toArray();
  expect(stored.map((d) => [d["name"], d["version"], d["deleted"]])).toEqual([["kept", 0, undefined]]);
});
