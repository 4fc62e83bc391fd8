/**
 * What the bench drives a stack with, as `@rms/cli/stack` (bench/src): the child processes, the public API client and
 * the webhook receivers of the noisy-neighbour runs.
 */
export { freePort, newTestKey, startCoreProcess, startGatewayProcess } from "./processes.js";
export { startNodeChild } from "./children.js";
export { DEFAULT_WORKER_HEAP_MB, serviceNodeFlags, workerNodeFlags } from "./heap.js";
export { PublicApi } from "./public-api.js";
export { queueDeadBacklog, startSilentServer } from "./noisy-neighbour.js";
