import { deliveryTask } from "./deliveries.js";
import { jobsTask } from "./jobs.js";
import type { WorkerTask } from "./task.js";

/** Every task a worker process runs: one line per kind of background work. */
export const WORKER_TASKS: readonly WorkerTask[] = [deliveryTask(), jobsTask()];
