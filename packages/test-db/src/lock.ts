import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const STALE_AFTER_MS = 20 * 60_000;

function holderAlive(lockDir: string): boolean {
  try {
    const pid = Number(readFileSync(join(lockDir, "pid"), "utf8"));
    if (!pid) return Date.now() - statSync(lockDir).mtimeMs < 10_000; // just created, pid not written yet
    process.kill(pid, 0);
    return Date.now() - statSync(lockDir).mtimeMs < STALE_AFTER_MS;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Runs `task` while holding a lock directory, so that several processes (turbo
 * runs packages' tests in parallel) never build the same thing at once. A lock
 * whose holder died is taken over. `done()` is checked after waiting, so the
 * waiters skip the task when the holder already did the work.
 */
export async function withLock<T>(lockDir: string, done: () => T | undefined, task: () => Promise<T>): Promise<T> {
  for (;;) {
    const finished = done();
    if (finished !== undefined) return finished;
    try {
      mkdirSync(lockDir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      if (!holderAlive(lockDir)) rmSync(lockDir, { recursive: true, force: true });
      else await new Promise((r) => setTimeout(r, 500));
      continue;
    }
    try {
      writeFileSync(join(lockDir, "pid"), String(process.pid));
      return await task();
    } finally {
      rmSync(lockDir, { recursive: true, force: true });
    }
  }
}
