import { jobsTask } from "../jobs/runner/task.js";
import { deliveryTask } from "../webhooks/worker.js";
import type { WorkerTask } from "./task.js";

/** Every task a worker process runs: one line per kind of background work. */
export const WORKER_TASKS: readonly WorkerTask[] = [deliveryTask(), jobsTask()];
