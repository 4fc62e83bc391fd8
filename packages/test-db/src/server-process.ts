import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { MongoClient } from "mongodb";

const live = new Set<ChildProcess>();
let exitHooksInstalled = false;

function killAll(signal: NodeJS.Signals): void {
  for (const child of live) child.kill(signal);
}

/**
 * Whatever happens to this process, no database child outlives it: killed on
 * `exit` (SIGKILL), and sent SIGTERM on SIGINT/SIGTERM/SIGHUP. A signal that nobody else handles is
 * re-raised after the children are killed, so the default (dying) still happens.
 */
function killOnExit(child: ChildProcess): void {
  live.add(child);
  child.once("exit", () => live.delete(child));
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  process.once("exit", () => killAll("SIGKILL"));
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    const onSignal = (): void => {
      killAll("SIGTERM");
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    // First in line: the listeners registered before us (e.g. a launcher's own `once` handler) have not run and
    // been removed yet, so the count above still sees them and the signal is not re-raised under them.
    process.prependOnceListener(signal, onSignal);
  }
}

export interface ServerProcess {
  readonly child: ChildProcess;
  /** Resolves when the process is gone, with its exit code or the signal that ended it. */
  readonly exited: Promise<number | string>;
  /** SIGTERM (after a SIGCONT, in case it was frozen), then SIGKILL after `graceMs` (default STOP_GRACE_MS). */
  stop(graceMs?: number): Promise<void>;
}

export const STOP_GRACE_MS = 5_000;

/** Linux: util-linux `setpriv --pdeathsig` makes the kernel send the server SIGTERM when its parent dies. */
const SETPRIV = ["/usr/bin/setpriv", "/bin/setpriv"].find((path) => process.platform === "linux" && existsSync(path));

/**
 * Starts a database server binary with its output going to `logFile`. Even when
 * this process is SIGKILLed the server goes: through setpriv's parent-death
 * signal (it execs the server, so the pid is the server's), and stdin is a pipe
 * held by this process, which a server may watch (the Java runner does).
 */
export function spawnServer(command: string, args: readonly string[], logFile: string): ServerProcess {
  const log = openSync(logFile, "a");
  const [file, argv] = SETPRIV ? [SETPRIV, ["--pdeathsig", "TERM", "--", command, ...args]] : [command, args];
  const child = spawn(file, argv, { stdio: ["pipe", log, log] });
  closeSync(log);
  child.stdin?.on("error", () => undefined);
  killOnExit(child);
  const exited = new Promise<number | string>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode ?? child.signalCode ?? 0);
    else child.once("exit", (code, signal) => resolve(code ?? signal ?? 0));
  });
  return {
    child,
    exited,
    async stop(graceMs = STOP_GRACE_MS) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // A process stopped by SIGSTOP (a chaos run's frozen primary) would hold SIGTERM until it is continued.
      child.kill("SIGCONT");
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
      child.stdin?.destroy();
    },
  };
}

/** Last lines of a log file, for error messages. */
export function tail(logFile: string, lines = 15): string {
  try {
    return readFileSync(logFile, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/** Waits until a server answers `ping` through the official driver. */
export async function waitForPing(uri: string, timeoutMs: number, server?: ServerProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (server && (server.child.exitCode !== null || server.child.signalCode !== null)) {
      throw new Error(`the database process exited with ${server.child.exitCode ?? server.child.signalCode}`);
    }
    const client = new MongoClient(uri, { serverSelectionTimeoutMS: 500, connectTimeoutMS: 500 });
    try {
      await client.db("admin").command({ ping: 1 });
      return;
    } catch (error) {
      lastError = error;
      // Answers, but in a protocol version the driver refuses: waiting will not help.
      if (/wire version/i.test(String(error))) throw error;
    } finally {
      await client.close().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the database did not answer ping within ${timeoutMs} ms: ${String(lastError)}`);
}
