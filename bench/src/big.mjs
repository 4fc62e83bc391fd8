// The page at BENCH_BIG resources (default 1,000,000) of `npm run bench` (issue 22): an account of its own filled
// with documents exactly as an import writes them (core's `importedResource`), their events taken as already relayed
// (an empty outbox), by raw insertMany into core's resources collection, since a million creates through the API
// would take the better part of an hour here. Then the list page of 20 under load in that account, against the same
// page in the account of DEPTH + 100 (the list rows' account) measured right before it, in the same database; and
// the same for the two-filter list and the search (status and metadata).
import { FILTERED_LIST, SEARCH } from "./depth.mjs";

export async function bigAccountRows({ run, results, stack, apiUrl, mongoUri, databaseName, size, smallKey, say }) {
  const { KeyKind } = await import("@rms/proto");
  const { MongoClient } = await import("mongodb");
  const batch = await import("@rms/core/bench");
  const { account } = await stack.admin.createAccount({});
  const bigKey = (await stack.admin.createKey({ accountId: account.id, kind: KeyKind.SECRET, livemode: false })).secret;
  const tenant = { account: account.id, livemode: false };
  const client = await new MongoClient(mongoUri, { writeConcern: { w: "majority", journal: true } }).connect();
  try {
    const resources = client.db(databaseName).collection("resources");
    say(`filling an account with ${size.toLocaleString("en")} resources (as an import writes them)`);
    const started = Date.now();
    const chunk = 5_000;
    let next = 0;
    await Promise.all(
      Array.from({ length: 2 }, async () => {
        while (next < size) {
          const from = next;
          next += chunk;
          const nowMs = Date.now();
          const docs = [];
          for (let i = from; i < Math.min(size, from + chunk); i++) {
            const doc = batch.importedResource(
              tenant,
              batch.importedResourceId("job_benchbig", i, nowMs),
              { name: `big ${i}`, status: "active", metadata: [{ k: "tier", v: i % 2 ? "a" : "b" }] },
              nowMs,
              { requestId: null, idempotencyKey: null },
            );
            doc.pending_events = [];
            docs.push(doc);
          }
          await resources.insertMany(docs, { ordered: false });
        }
      }),
    );
    const fillSeconds = (Date.now() - started) / 1000;
    say(`filled in ${fillSeconds.toFixed(0)} s`);
    await run.http("list_small_again", `${apiUrl}/v1/resources?limit=20`, { headers: { authorization: `Bearer ${smallKey}` } }, stack.pids());
    await run.http("list_big", `${apiUrl}/v1/resources?limit=20`, { headers: { authorization: `Bearer ${bigKey}` } }, stack.pids());
    // The filtered list and the search with the same two conditions (issue 21: index-backed at a million).
    const small = { headers: { authorization: `Bearer ${smallKey}` } };
    const big = { headers: { authorization: `Bearer ${bigKey}` } };
    await run.http("list_filtered_small_again", `${apiUrl}/v1/resources?${FILTERED_LIST}`, small, stack.pids());
    await run.http("list_filtered_big", `${apiUrl}/v1/resources?${FILTERED_LIST}`, big, stack.pids());
    await run.http("search_small_again", `${apiUrl}/v1/resources/search?${SEARCH}`, small, stack.pids());
    await run.http("search_big", `${apiUrl}/v1/resources/search?${SEARCH}`, big, stack.pids());
    results.list_big.fill_seconds = fillSeconds;
    return { fillSeconds };
  } finally {
    await client.close();
  }
}
