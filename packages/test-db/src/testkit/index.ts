// @rms/test-db/testkit: small helpers for tests (no vitest import, usable from any test runner).
export { eventually, type EventuallyOptions } from "./eventually.js";
export { startTcpRelay, type TcpRelay } from "./relay.js";
export { dropDatabase } from "./drop.js";
export { CommandLog, explainCommand, explainDuring, isQueryCommand, keysPerIndex, planTable, winningStages, type QueryPlan } from "./explain.js";
export { installedTool, promtoolCheck, promtoolInstalled } from "./tools.js";
export { GRPCIO_TOOLS, pythonPackages, type PythonPackages } from "./python.js";
