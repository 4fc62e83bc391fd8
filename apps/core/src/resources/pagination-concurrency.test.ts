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

  // Every page is read while one insert and one delete are in flight, so the writes overlap the walk by
  // construction. Deletions go oldest first, the walk newest first: the walk meets some doomed resources
  // before their deletion and reaches the place of others after it.
  const inserted: string[] = [];
  const deleted: string[] = [];
  const toDelete = [...doomed];
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  for (;;) {
    const victim = toDelete.shift();
    const [page] = await Promise.all([
      t.resources.listResources({ tenant, limit: 7, ...(cursor ? { startingAfter: cursor } : {}) }),
      t.resources.createResource({ tenant, name: `new${pages}` }).then(({ resource }) => inserted.push(resource!.id)),
      victim ? t.resources.deleteResource({ tenant, id: victim }).then(() => deleted.push(victim)) : undefined,
    ]);
    pages++;
    seen.push(...page.resources.map((r) => r.id));
    if (!page.hasMore) break;
    cursor = page.resources.at(-1)!.id;
  }

  expect(new Set(seen).size).toBe(seen.length); // nothing twice
  for (const id of stable) expect(seen).toContain(id); // nothing skipped
  expect([...seen].sort().reverse()).toEqual(seen); // one total order, newest first
  // The writes really happened during the walk: the walk spanned several pages, each with a committed
  // insert and delete; deletions ahead of the cursor removed resources the walk then never met, and
  // doomed resources the walk passed before their turn were seen.
  expect(pages).toBeGreaterThanOrEqual(5);
  expect(inserted).toHaveLength(pages);
  expect(deleted.length).toBeGreaterThanOrEqual(pages - 1);
  expect(deleted.filter((id) => !seen.includes(id)).length).toBeGreaterThan(0);
  expect(doomed.filter((id) => seen.includes(id)).length).toBeGreaterThan(0);
  // Inserts are newer than every cursor after the first page: at most the first page could show them.
  expect(seen.slice(7).filter((id) => inserted.includes(id))).toEqual([]);
});
