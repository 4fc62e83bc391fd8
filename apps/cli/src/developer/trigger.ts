import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type RMS, RMSInvalidRequestError } from "@rms/sdk";
import type { DeveloperIo } from "./io.js";

/**
 * `rms trigger <event type>`: a real change in test mode that emits that event, through the API with the
 * developer's key (never a made-up event: what `listen` then shows is what an integration will receive).
 */

/** A trigger that cannot be run as asked (a live key, an event this deployment cannot be made to emit); exit 2. */
export class TriggerRefusedError extends Error {
  override readonly name = "TriggerRefusedError";
}

/** What a fixture made: the object the event is about. */
interface Made {
  readonly objectId: string;
}

interface Fixture {
  /** For `rms trigger --help`: what the trigger makes. */
  readonly makes: string;
  run(rms: RMS, report: (made: { id: string; object: string }, human: string) => void): Promise<Made>;
}

const NAME = "rms trigger";
const metadataOf = (type: string) => ({ rms_trigger: type });
/** How long a job made by a trigger may take to finish. */
const JOB_WAIT_MS = 120_000;
/** How long `webhook_endpoint.disabled` waits for the delivery that gets its 410. */
const DISABLE_WAIT_MS = 30_000;
/** How long the trigger looks for its event in the list (events are listed within about a second). */
const EVENT_LOOKUP_MS = 15_000;

async function createResource(rms: RMS, type: string, report: Parameters<Fixture["run"]>[1]) {
  const resource = await rms.resources.create({ name: `${NAME} ${type}`, metadata: metadataOf(type) });
  report(resource, `created resource ${resource.id}`);
  return resource;
}

/** Waits for a job to finish and says how it ended. */
async function finished(rms: RMS, id: string, report: Parameters<Fixture["run"]>[1]) {
  const job = await rms.jobs.wait(id, { timeoutMs: JOB_WAIT_MS });
  report(job, `job ${job.id} ${job.status}${job.failure_code ? ` (${job.failure_code})` : ""}`);
  return job;
}

/** Items of the import `job.canceled` cancels: more than one chunk, so a running job meets a checkpoint. */
const CANCELED_IMPORT_ITEMS = 2_000;

/** A CSV whose header names a column an import does not know: the job fails as a whole (`file_invalid`), creating nothing. */
const UNREADABLE_IMPORT = "colour\nred\n";

export const FIXTURES: Readonly<Record<string, Fixture>> = {
  "resource.created": {
    makes: "creates a resource",
    run: async (rms, report) => ({ objectId: (await createResource(rms, "resource.created", report)).id }),
  },
  "resource.updated": {
    makes: "creates a resource and pauses it",
    async run(rms, report) {
      const resource = await createResource(rms, "resource.updated", report);
      const updated = await rms.resources.update(resource.id, { status: "paused" });
      report(updated, `updated resource ${updated.id} (status ${updated.status})`);
      return { objectId: resource.id };
    },
  },
  "resource.deleted": {
    makes: "creates a resource and deletes it",
    async run(rms, report) {
      const resource = await createResource(rms, "resource.deleted", report);
      const deleted = await rms.resources.del(resource.id);
      report(deleted, `deleted resource ${resource.id}`);
      return { objectId: resource.id };
    },
  },
  "job.succeeded": {
    makes: "imports one resource (an import job) and waits for it",
    async run(rms, report) {
      const job = await rms.jobs.create({
        type: "resources.import",
        params: { items: [{ name: `${NAME} job.succeeded`, metadata: metadataOf("job.succeeded") }] },
      });
      report(job, `created job ${job.id} (${job.type})`);
      const done = await finished(rms, job.id, report);
      if (done.status !== "succeeded") throw new Error(`the job ended ${done.status}, not succeeded`);
      return { objectId: job.id };
    },
  },
  "job.failed": {
    makes: "uploads a CSV with an unknown column and imports it: the job fails (file_invalid), creating nothing",
    async run(rms, report) {
      const file = await rms.files.create({
        purpose: "resources_import",
        file: new TextEncoder().encode(UNREADABLE_IMPORT),
        filename: "rms-trigger-job-failed.csv",
      });
      report(file, `uploaded file ${file.id} (${file.filename})`);
      const job = await rms.jobs.create({ type: "resources.import", params: { file: file.id } });
      report(job, `created job ${job.id} (${job.type})`);
      const done = await finished(rms, job.id, report);
      if (done.status !== "failed") throw new Error(`the job ended ${done.status}, not failed`);
      return { objectId: job.id };
    },
  },
  "job.canceled": {
    makes: `imports ${CANCELED_IMPORT_ITEMS} items that all fail its checks (nothing is created) and cancels the job`,
    async run(rms, report) {
      // Queued, the cancel is at once; running, it lands at the job's next checkpoint (one per 1,000 items). A job
      // that finished before its cancel arrived is made again.
      for (let attempt = 1; attempt <= 5; attempt++) {
        const items = Array.from({ length: CANCELED_IMPORT_ITEMS }, () => ({ name: "" }));
        const job = await rms.jobs.create({ type: "resources.import", params: { items } });
        report(job, `created job ${job.id} (${job.type} of ${CANCELED_IMPORT_ITEMS} items without a name)`);
        try {
          await rms.jobs.cancel(job.id);
        } catch (error) {
          if (error instanceof RMSInvalidRequestError && error.code === "state_conflict") continue;
          throw error;
        }
        const done = await finished(rms, job.id, report);
        if (done.status === "canceled") return { objectId: job.id };
      }
      throw new Error("five jobs in a row finished before their cancel reached them");
    },
  },
  "webhook_endpoint.disabled": {
    makes:
      "points a new endpoint at a receiver of its own on 127.0.0.1 that answers 410, creates a resource and waits for the delivery to disable the " +
      "endpoint (a local stack started with WEBHOOK_ALLOW_PRIVATE=true)",
    run: endpointDisabled,
  },
};

/**
 * A 410 disables an endpoint at once (CONTRACT.md section 7), the only way to it short of 5 days of failures: a
 * receiver on this machine answers 410 and the delivery to it must come. So it works where the API delivers to
 * this machine's loopback (`npm start` with WEBHOOK_ALLOW_PRIVATE=true), and says why not elsewhere.
 */
async function endpointDisabled(rms: RMS, report: Parameters<Fixture["run"]>[1]): Promise<Made> {
  let deliveries = 0;
  const receiver = createServer((req, res) => {
    deliveries++;
    req.resume();
    res.writeHead(410).end();
  });
  receiver.listen(0, "127.0.0.1");
  await once(receiver, "listening");
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/rms-trigger`;
  let endpointId: string | undefined;
  try {
    try {
      const endpoint = await rms.webhookEndpoints.create({ url, enabled_events: ["resource.created"], description: `${NAME} webhook_endpoint.disabled` });
      endpointId = endpoint.id;
      report(endpoint, `created webhook endpoint ${endpoint.id} -> ${url} (answers 410)`);
    } catch (error) {
      if (!(error instanceof RMSInvalidRequestError)) throw error;
      throw new TriggerRefusedError(
        `webhook_endpoint.disabled needs a delivery to a receiver on this machine that answers 410, and this deployment refuses an endpoint at ${url}: ` +
          `${error.message} (a local stack allows it when started with WEBHOOK_ALLOW_PRIVATE=true)`,
      );
    }
    await createResource(rms, "webhook_endpoint.disabled", report);
    const deadline = Date.now() + DISABLE_WAIT_MS;
    for (;;) {
      const endpoint = await rms.webhookEndpoints.retrieve(endpointId);
      if (endpoint.status === "disabled") {
        report(endpoint, `webhook endpoint ${endpoint.id} disabled after its 410`);
        return { objectId: endpoint.id };
      }
      if (Date.now() > deadline) {
        throw new TriggerRefusedError(
          `webhook_endpoint.disabled needs a delivery to ${url}, and ${deliveries === 0 ? "none came" : "the endpoint was not disabled"} within ` +
            `${DISABLE_WAIT_MS / 1000} s: the API must run on this machine and deliver to its loopback (WEBHOOK_ALLOW_PRIVATE=true)`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    receiver.close();
    // The endpoint served its purpose; its event is kept (a delete relays a waiting event first).
    if (endpointId) await rms.webhookEndpoints.del(endpointId).catch(() => undefined);
  }
}

/** The event the change emitted, once it is listed (within about a second), or undefined after EVENT_LOOKUP_MS. */
async function emitted(rms: RMS, type: string, objectId: string): Promise<string | undefined> {
  const deadline = Date.now() + EVENT_LOOKUP_MS;
  for (;;) {
    // An object's events are listed newest change first (the list takes no type beside an object).
    const page = await rms.events.list({ object: objectId, limit: 10 });
    const found = page.data.find((event) => event.type === type);
    if (found) return found.id;
    if (Date.now() > deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Runs the fixture of `type`, printing each object it made and then the event's id (`--json`: the objects, then the result). */
export async function trigger(rms: RMS, type: string, options: { readonly json: boolean }, io: DeveloperIo): Promise<void> {
  const fixture = FIXTURES[type];
  if (!fixture) throw new TriggerRefusedError(`rms trigger knows ${Object.keys(FIXTURES).join(", ")}; not ${type}`);
  const made = await fixture.run(rms, (object, human) => io.stdout(`${options.json ? JSON.stringify(object) : human}\n`));
  const event = await emitted(rms, type, made.objectId);
  if (options.json) io.stdout(`${JSON.stringify({ object: "trigger", type, event: event ?? null, data_object: made.objectId })}\n`);
  else if (event) io.stdout(`Trigger succeeded! ${type} [${event}]\n`);
  else io.stdout(`Trigger succeeded! ${type} of ${made.objectId} (its event is not listed yet)\n`);
}
