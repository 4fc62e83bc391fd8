import { eventually } from "@rms/test-db/testkit";
import type { Db } from "mongodb";
import { expect } from "vitest";
import type { StackWithSecretKey } from "./harness.js";

/** What several of the jobs route tests (routes/jobs/) check against and do. */

/** The job object's fields, in the order the API writes them. */
export const JOB_FIELDS = [
  "id",
  "object",
  "type",
  "status",
  "params",
  "progress",
  "result",
  "failure_code",
  "failure_message",
  "attempts",
  "cancel_requested_at",
  "livemode",
  "created",
  "started_at",
  "finished_at",
];
/** A well-formed resource id that no test creates. */
export const RES_ID = "res_0000000000000000000000";

/** The body with the fields that differ between two jobs of one request (id, created) masked. */
export const masked = (text: string) =>
  text
    .replace(/"id":"job_[0-9A-Za-z]{22}"/, '"id":"job_x"')
    .replace(/"created":\d+/, '"created":0')
    .replace(/"file":"file_[0-9A-Za-z_]+"/, '"file":"file_x"');

/** Moves a job to a state only the runner reaches (the runner is not part of these stacks). */
export async function setJob(db: Db, id: string, fields: Record<string, unknown>) {
  await db.collection("jobs").updateOne({ _id: id as never }, { $set: fields });
}

/** The job `id` once a worker has finished it (succeeded, failed or canceled), as the API shows it; waits up to `timeoutMs`. */
export function finishedJob({ stack, key }: StackWithSecretKey, id: string, timeoutMs: number) {
  return eventually(
    async () => {
      // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
      const job = (await stack.api.get(`/v1/jobs/${id}`, { key })).json as Record<string, any>;
      expect(["succeeded", "failed", "canceled"]).toContain(job.status);
      return job;
    },
    { timeoutMs },
  );
}
