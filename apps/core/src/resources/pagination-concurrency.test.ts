type Tenant = { accountId: string; livemode: boolean };
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestCore, type TestCore } from "../testutil/harness.js";

let t: TestCore;
beforeAll(async () => {
  t = await startTestCore();
});
afterAll(() => t.stop());

it("walking pages while others insert and delete never repeats or skips a resource that existed throughout", async () => {
  const tenant: Tenant = (await t.newAccount()).test;
  const stable = new Set<string>();
  const doomed: string[] = [];
  for (let i = 0; i < 60; i++) {
    const { resource } = await t.resources.createResource({ tenant, name: `seed${i}` });
    if (i % 3 === 0) doomed.push(resource!.id);
    else stable.add(resource!.id);
  }

  // Writers: keep inserting new resources and deleting the doomed ones while the walk runs.
  let walking = true;
  const inserted: string[] = [];
  const writers = [
    (async () => {
      for (let i = 0; walking && i < 200; i++) inserted.push((await t.resources.createResource({ tenant, name: `new${i}` })).resource!.id);
    })(),
    (async () => {
      for (const id of doomed) {
        if (!walking) break;
        await t.resources.deleteResource({ tenant, id });
      }
    })(),
  ];

  const seen: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await t.resources.listResources({ tenant, limit: 7, ...(cursor ? { startingAfter: cursor } : {}) });
    seen.push(...page.resources.map((r) => r.id));
    if (!page.hasMore) break;
    cursor = page.resources.at(-1)!.id;
  }
  walking = false;
  await Promise.all(writers);

  expect(new Set(seen).size).toBe(seen.length); // nothing twice
  for (const id of stable) expect(seen).toContain(id); // nothing skipped
  expect([...seen].sort().reverse()).toEqual(seen); // one total order, newest first
  expect(inserted.length + doomed.length).toBeGreaterThan(0);
});
