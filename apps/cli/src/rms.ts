// Entry point of the `rms` CLI: the only place that reads process.env and argv.
import { runCli } from "./cli.js";

const code = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  startStack: async () => (await import("./stack/start.js")).startStack(process.env),
  startCluster: async () => (await import("./cluster/run.js")).runCluster(process.env),
});
if (process.exitCode === undefined || code !== 0) process.exitCode = code;
