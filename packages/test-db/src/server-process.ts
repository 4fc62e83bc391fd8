import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { MongoClient } from "mongodb";

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Whatever happens to this process, no database child outlives it. */
function killOnExit(child: ChildProcess): void {
  live.add(child);
  child.once("exit", () => live.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const c of live) c.kill("SIGKILL");
  });
}

export interface ServerProcess {
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts a database server binary with its output going to `logFile`. */
export function spawnServer(command: string, args: readonly string[], logFile: string): ServerProcess {
  const log = openSync(logFile, "a");
  const child = spawn(command, args, { stdio: ["ignore", log, log] });
  closeSync(log);
  killOnExit(child);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
  return {
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
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
    } finally {
      await client.close().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the database did not answer ping within ${timeoutMs} ms: ${String(lastError)}`);
}
