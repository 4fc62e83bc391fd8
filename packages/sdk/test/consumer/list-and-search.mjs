// 250 resources by an import job (waited for), beside others that the filter leaves out; then the filtered list and a
// search of the same, each iterated to its end with for await.
import { rms, report } from "./client.mjs";

const batch = `b${Date.now()}`;
const items = Array.from({ length: 250 }, (_, i) => ({ name: `item ${i}`, metadata: { batch } }));
const job = await rms.jobs.create({ type: "resources.import", params: { items } });
const done = await rms.jobs.wait(job.id, { timeoutMs: 120_000 });
await rms.resources.create({ name: "not in the batch", metadata: { batch: `${batch}-other` } });
await rms.resources.create({ name: "in the batch, paused", status: "paused", metadata: { batch } });

const first = await rms.resources.list({ metadata: { batch }, status: "active", limit: 40 });
const listed = [];
for await (const resource of rms.resources.list({ metadata: { batch }, status: "active", limit: 40 })) {
  listed.push({ id: resource.id, batch: resource.metadata.batch, status: resource.status });
}
const searched = [];
for await (const resource of rms.resources.search({ query: `metadata['batch']:'${batch}' AND status:'active'`, limit: 40 })) {
  searched.push({ id: resource.id, batch: resource.metadata.batch, status: resource.status });
}
report({
  batch,
  job: { id: job.id, status: done.status, created: done.result?.created },
  firstPage: { object: first.object, count: first.data.length, hasMore: first.has_more },
  listed,
  searched,
});
