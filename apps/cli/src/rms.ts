// Entry point of the `rms` CLI: the only place that reads process.env and argv.
import { runCli } from "./cli.js";

const code = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  startStack: async () => (await import("./stack/start.js")).startStack(process.env),
  startCluster: async () => (await import("./cluster/run.js")).runCluster(process.env),
  interrupted: () => {
    // Asked for by the commands that run until stopped; the others keep Node's own handling of ^C.
    const controller = new AbortController();
    const stop = (signal: NodeJS.Signals) => controller.abort(new Error(`${signal}: stopped`));
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    return controller.signal;
  },
});
if (process.exitCode === undefined || code !== 0) process.exitCode = code;
