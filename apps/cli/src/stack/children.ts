import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync } from "node:fs";

export interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  /** Resolves with the exit code (or signal name) when the child is gone. */
  readonly exited: Promise<number | string>;
  /** SIGTERM, then SIGKILL after `graceMs`. Resolves once the child is gone. */
  stop(graceMs: number): Promise<void>;
}

/**
 * Starts a Node.js child that shares our stdout/stderr, with exactly `env` (empty values left out): nothing
 * else of our environment, so a child never gets what it must not have (e.g. the admin token). Its stdin is
 * a pipe it watches (RMS_SUPERVISED=1): if this process dies, even by SIGKILL, the pipe closes and the child
 * shuts itself down, so none outlives the launcher. With `stdout: "pipe"` its stdout is the caller's to read;
 * `nodeFlags` go to Node itself (a worker's heap: heap.ts).
 */
export function startNodeChild(
  name: string,
  script: string,
  env: Record<string, string>,
  stdout: "inherit" | "pipe" = "inherit",
  nodeFlags: readonly string[] = [],
): Child {
  const childEnv = Object.fromEntries(Object.entries({ ...env, RMS_SUPERVISED: "1" }).filter(([, value]) => value !== ""));
  const child = spawn(process.execPath, [...nodeFlags, script], {
    env: childEnv,
    // `pipe`: the caller reads the child's log lines from `process.stdout` (tests).
    stdio: ["pipe", stdout, "inherit"],
  });
  return childHandle(name, child);
}

/** Linux: util-linux `setpriv --pdeathsig` makes the kernel send the child SIGTERM when this process dies. */
const SETPRIV = ["/usr/bin/setpriv", "/bin/setpriv"].find((path) => process.platform === "linux" && existsSync(path));

/**
 * Starts a program that is not ours (HAProxy) with exactly `env`, its output appended to `logFile`. It cannot
 * watch a pipe as our children do; on Linux it gets SIGTERM from the kernel when this process dies, even by SIGKILL
 * (it is started through setpriv, which execs it: the pid is the program's).
 */
export function startProgramChild(name: string, command: string, args: readonly string[], env: Record<string, string>, logFile: string): Child {
  const log = openSync(logFile, "a");
  const [file, argv] = SETPRIV ? [SETPRIV, ["--pdeathsig", "TERM", "--", command, ...args]] : [command, [...args]];
  const child = spawn(file, argv, { env, stdio: ["ignore", log, log] });
  closeSync(log);
  const handle = childHandle(name, child);
  // Whatever ends this process normally (exit, or a signal handled by someone else) ends the program too.
  const onExit = () => child.kill("SIGKILL");
  process.once("exit", onExit);
  void handle.exited.then(() => process.off("exit", onExit));
  return handle;
}

/** A spawned process as a Child: its exit, and a stop that sends SIGTERM, then SIGKILL after `graceMs`. */
function childHandle(name: string, child: ChildProcess): Child {
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? 0)));
  return {
    name,
    process: child,
    exited,
    async stop(graceMs) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Polls `probe` until it resolves true or the time is up. */
export async function waitUntil(what: string, probe: () => Promise<boolean>, timeoutMs: number, child?: Child): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let gone = false;
  void child?.exited.then(() => (gone = true));
  while (Date.now() < deadline) {
    if (gone) throw new Error(`${what}: the process exited before it was ready`);
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: not ready after ${Math.round(timeoutMs / 1000)} s`);
}
