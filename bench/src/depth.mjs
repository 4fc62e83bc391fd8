// The rows of `npm run bench` in a large account: DEPTH + 100 resources seeded through core (admin service), list
// page 1 against the page DEPTH items deep (one request at a time), page 1 under load, the list with two filters and
// the search with the same two conditions under load, each against baseline C's same query (`c`: its url and the
// function that gives it a key), and one resource updated UPDATES times through core (first UPDATE_WINDOW updates
// against the last). Every seeded resource has `tier` a or b in its metadata (half of them each), the filters' field.
import { httpsJson, sampleRss } from "./load.mjs";

/** The list's two filters and the search's same two conditions (half the account matches both: every resource is active). */
export const FILTERED_LIST = "limit=20&status=active&metadata[tier]=a";
export const SEARCH = `limit=20&query=${encodeURIComponent("status:'active' AND metadata['tier']:'a'")}`;

export async function depthRows({ run, results, stack, apiUrl, ca, c, e = null, depth, listRequests, updates, updateWindow, say }) {
  const { KeyKind } = await import("@rms/proto");
  const { admin, coreResources } = stack;
  const { account } = await admin.createAccount({});
  const listKey = (await admin.createKey({ accountId: account.id, kind: KeyKind.SECRET, livemode: false })).secret;
  const listTenant = { accountId: account.id, livemode: false };
  say(`seeding ${depth + 100} resources for the deep page`);
  const seedStarted = Date.now();
  let next = 0;
  const seeded = [];
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < depth + 100) {
        next++;
        const { resource } = await coreResources.createResource({
          tenant: listTenant,
          name: `seed ${next}`,
          metadata: [
            { key: "i", value: String(next) },
            { key: "tier", value: next % 2 ? "a" : "b" },
          ],
        });
        seeded.push(resource.id);
      }
    }),
  );
  const seedSeconds = (Date.now() - seedStarted) / 1000;
  // The cursor DEPTH items deep: ids sort newest first, and this account holds only the seeded ones.
  seeded.sort().reverse();
  const cursor = seeded[depth - 1];
  // Pages are timed one request at a time (see docs/performance.md).
  const page = async (name, url) => {
    say(`run ${name}`);
    const rss = sampleRss(stack.pids());
    const times = [];
    for (let i = 0; i < listRequests; i++) {
      const t = performance.now();
      const body = await httpsJson("GET", url, ca, { authorization: `Bearer ${listKey}` });
      if (body.data.length !== 20) throw new Error(`${name}: ${body.data.length} items`);
      times.push(performance.now() - t);
    }
    times.sort((x, y) => x - y);
    const mean = times.reduce((x, y) => x + y, 0) / times.length;
    results[name] = {
      rps: 1000 / mean,
      p50: times[Math.floor(times.length / 2)],
      p99: times[times.length - 1],
      total: times.length,
      errors: 0,
      rss_mb: rss.stop(),
    };
  };
  await page("list_page1", `${apiUrl}/v1/resources?limit=20`);
  await page("list_deep", `${apiUrl}/v1/resources?limit=20&starting_after=${cursor}`);
  // A list page under load in the account holding DEPTH + 100 resources, against baseline B.
  const listHeaders = { headers: { authorization: `Bearer ${listKey}` } };
  await c.key(listKey, { accountId: account.id, livemode: false });
  await run.pair(
    { name: "list", url: `${apiUrl}/v1/resources?limit=20`, opts: listHeaders, pids: stack.pids() },
    { name: "c_list", url: `${c.url}/v1/resources?limit=20`, opts: listHeaders, pids: c.pids() },
    e && { name: "e_list", url: `${e.url}/v1/resources?limit=20`, opts: listHeaders, pids: e.pids() },
  );
  // Two filters on the list, and the search with the same two conditions (one index drives both: tenant, metadata, status).
  await run.pair(
    { name: "list_filtered", url: `${apiUrl}/v1/resources?${FILTERED_LIST}`, opts: listHeaders, pids: stack.pids() },
    { name: "c_list_filtered", url: `${c.url}/v1/resources?${FILTERED_LIST}`, opts: listHeaders, pids: c.pids() },
    e && { name: "e_list_filtered", url: `${e.url}/v1/resources?${FILTERED_LIST}`, opts: listHeaders, pids: e.pids() },
  );
  await run.pair(
    { name: "search", url: `${apiUrl}/v1/resources/search?${SEARCH}`, opts: listHeaders, pids: stack.pids() },
    { name: "c_search", url: `${c.url}/v1/resources/search?${SEARCH}`, opts: listHeaders, pids: c.pids() },
    e && { name: "e_search", url: `${e.url}/v1/resources/search?${SEARCH}`, opts: listHeaders, pids: e.pids() },
  );
  // One resource updated UPDATES times through core: the first UPDATE_WINDOW updates against the last
  // (each waits for the one before, so a growing document or outbox would show as slower updates).
  if (updates === 0) return { seedSeconds, listKey, listTenant };
  say(`run ${updates.toLocaleString("en")} updates of one resource`);
  const rss = sampleRss(stack.pids());
  const { resource } = await coreResources.createResource({ tenant: listTenant, name: "often updated" });
  const times = [];
  for (let i = 1; i <= updates; i++) {
    const t = performance.now();
    await coreResources.updateResource({ tenant: listTenant, id: resource.id, metadata: [{ key: "n", value: String(i) }] });
    times.push(performance.now() - t);
  }
  const rssMb = rss.stop();
  const summary = (slice) => {
    const sorted = [...slice].sort((x, y) => x - y);
    const mean = sorted.reduce((x, y) => x + y, 0) / sorted.length;
    return {
      rps: 1000 / mean,
      p50: sorted[Math.floor(sorted.length / 2)],
      p99: sorted[Math.floor(sorted.length * 0.99)],
      total: sorted.length,
      errors: 0,
      rss_mb: rssMb,
    };
  };
  results.update_first = summary(times.slice(0, updateWindow));
  results.update_last = summary(times.slice(-updateWindow));
  return { seedSeconds, listKey, listTenant };
}
