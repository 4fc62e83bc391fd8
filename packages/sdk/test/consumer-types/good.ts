// A consumer that uses the SDK as its types say: compiles under `tsc --strict`.
import { type Job, type Resource, RMS, RMSInvalidRequestError, Webhooks } from "@rms/sdk";

const rms = new RMS("sk_test_key", { baseUrl: "https://localhost:8443", maxNetworkRetries: 3 });

export async function main(): Promise<Resource[]> {
  const created = await rms.resources.create({ name: "typed", status: "paused", metadata: { plan: "pro" } }, { idempotencyKey: "order-1" });
  const requestId: string | undefined = created.lastResponse.requestId;
  const updated = await rms.resources.update(created.id, { status: "archived" });
  const page = await rms.resources.list({ status: "active", limit: 10, starting_after: updated.id });
  const all: Resource[] = [...page.data];
  for await (const resource of rms.resources.list({ status: ["active", "paused"], metadata: { plan: "pro" }, created: { gte: 1_700_000_000 } }))
    all.push(resource);
  for await (const resource of rms.resources.search({ query: "status:'active'" })) all.push(resource);
  const job: Job = await rms.jobs.create({ type: "resources.import", params: { items: [{ name: "a" }] } });
  const finished = await rms.jobs.wait(job.id, { timeoutMs: 60_000 });
  const preview = await rms.jobs.create({ type: "resources.bulk_delete", params: { filter: { status: "archived" } }, validate_only: true });
  const total: number = preview.total;
  const file = await rms.files.create(
    { purpose: "resources_import", file: new Uint8Array([123, 125, 10]), filename: "rows.jsonl" },
    { onProgress: (sent, of) => sent / of },
  );
  const bytes: ReadableStream<Uint8Array> = await rms.files.contents(file.id);
  const endpoint = await rms.webhookEndpoints.create({ url: "https://example.com/hook", enabled_events: ["resource.created"] });
  await rms.webhookEndpoints.rotateSecret(endpoint.id, { expires_in: 0 });
  try {
    await rms.resources.retrieve("res_0000000000000000000000");
  } catch (error) {
    if (error instanceof RMSInvalidRequestError) console.log(error.code, error.requestId, error.statusCode);
  }
  const event = await Webhooks.verify("{}", { "webhook-id": "evt_1" }, "whsec_c2VjcmV0");
  if (event.type === "resource.updated") console.log(event.data.previous_attributes);
  console.log(requestId, finished.status, total, bytes.locked, await rms.status.retrieve());
  return all;
}
