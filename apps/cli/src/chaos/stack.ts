// Stack supervision for `npm run chaos`: a genuine mongod, core, gateway and worker processes on loopback, each
// started again whenever it dies (SIGKILLed here, or by core's own crash point), and the random SIGKILLs.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDatabase } from "@rms/test-db";
import type { Child } from "../stack/children.js";
import { freePort, startCoreProcess, startGatewayProcess, startWorkerProcess } from "../stack/processes.js";
import { log, noteFault, sleep } from "./log.js";

/** A process of the single stack (`core`, `gateway`, `worker<n>`) or of the cluster (`core<n>`, `gateway<n>`, `worker<n>`). */
export type ProcessName = "core" | "gateway" | `core${number}` | `gateway${number}` | `worker${number}`;
export type ProcessKind = "core" | "gateway" | "worker";
const kindOf = (name: ProcessName): ProcessKind => (name.startsWith("core") ? "core" : name.startsWith("gateway") ? "gateway" : "worker");

export interface StackOptions {
  workers: number;
  /** Core's crash points (RMS_FAULTS). */
  coreFaults: string;
  /** The settings core and the workers share (RMS_SECRET_KEY, WEBHOOK_ALLOW_PRIVATE, ...). */
  settings: Record<string, string>;
  /** `--cluster`: where its gateways keep their rate limits (default `mongodb`, shared); the single stack's gateway keeps them in memory. */
  rateLimitStore?: "mongodb" | "memory";
}

export interface ChaosStack {
  /** The gateway's data directory (its development certificate). */
  readonly dir: string;
  readonly databaseUri: string;
  readonly databaseName: string;
  readonly coreAddr: string;
  readonly gatewayPort: number;
  readonly workerNames: readonly ProcessName[];
  /** What the random SIGKILLs of the resources phase choose from: every core, gateway and worker. */
  readonly killable: readonly ProcessName[];
  /** Times core died by its own crash point (a SIGKILL not sent here). */
  selfCrashes(): number;
  /** The running child of a process, if one runs now. */
  running(name: ProcessName): Child | undefined;
  /** SIGKILLs a process if it runs now; whether it did. */
  kill(name: ProcessName): boolean;
  /** Core without its crash points from now on: restarted (SIGTERM) without them, and answering again. */
  endCoreFaults(): Promise<void>;
  /** Stops every process for good (no restarts). */
  stopProcesses(): Promise<void>;
  /** Stops the database and removes the run's data. */
  close(): Promise<void>;
}

/** Starts the database and every process, each under a supervisor; resolves once core and gateway answer. */
export async function startChaosStack(options: StackOptions): Promise<ChaosStack> {
  const dir = mkdtempSync(join(tmpdir(), "rms-chaos-"));
  const database = await startDatabase({ dataDir: join(dir, "db"), env: { ...process.env, MONGODB_URI: "" } });
  const databaseName = "chaos";
  const corePort = await freePort();
  const coreAddr = `127.0.0.1:${corePort}`;
  const gatewayPort = await freePort();
  const workerNames = Array.from({ length: options.workers }, (_, i) => `worker${i + 1}` as const);
  const mongo = { mongoUri: database.uri, databaseName };
  let coreFaults = options.coreFaults;

  const launch: Record<ProcessName, () => Promise<Child>> = {
    core: () => startCoreProcess({ ...mongo, port: corePort, faults: coreFaults, env: options.settings }),
    gateway: () =>
      startGatewayProcess({
        ...mongo,
        coreAddr,
        dataDir: dir,
        port: gatewayPort,
        env: { RATE_LIMIT_TEST: "100000", RATE_LIMIT_LIVE: "100000", RATE_LIMIT_ADDRESS: "100000" },
      }),
    ...Object.fromEntries(workerNames.map((name) => [name, async () => startWorkerProcess({ ...mongo, name, env: options.settings })])),
  };
  const processes: Partial<Record<ProcessName, Child>> = {};
  const killedHere = new WeakSet<Child>();
  let stopping = false;
  let selfCrashes = 0;

  /** Keeps a process running: whenever it dies (killed here or by its crash point), it is started again. */
  const supervise = async (name: ProcessName): Promise<void> => {
    while (!stopping) {
      try {
        const child = await launch[name]!();
        processes[name] = child;
        const how = await child.exited;
        if (!stopping && name === "core" && how === "SIGKILL" && !killedHere.has(child)) selfCrashes++;
      } catch (error) {
        if (!stopping) log(`${name} did not start (${(error as Error).message.split("\n")[0]}); retrying`);
        await sleep(500);
      }
    }
  };
  const supervisors = (["core", "gateway", ...workerNames] as ProcessName[]).map(supervise);
  while (!processes.core || !processes.gateway) await sleep(100);

  const running = (name: ProcessName) => {
    const child = processes[name];
    return child && child.process.exitCode === null && child.process.signalCode === null ? child : undefined;
  };
  return {
    dir,
    databaseUri: database.uri,
    databaseName,
    coreAddr,
    gatewayPort,
    workerNames,
    killable: ["core", "gateway", ...workerNames],
    selfCrashes: () => selfCrashes,
    running,
    kill(name) {
      const child = running(name);
      if (!child) return false;
      killedHere.add(child);
      child.process.kill("SIGKILL");
      return true;
    },
    async endCoreFaults() {
      coreFaults = "";
      const before = processes.core;
      await before?.stop(5_000);
      while (processes.core === before || !running("core")) await sleep(100);
    },
    async stopProcesses() {
      stopping = true;
      for (const child of Object.values(processes)) await child?.stop(5_000);
      await Promise.all(supervisors);
    },
    async close() {
      await database.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Killer {
  /** Processes SIGKILLed so far, by kind. */
  readonly kills: Readonly<Record<ProcessKind, number>>;
  /** Ends the kills (after the current pause) and answers how many processes of each kind were SIGKILLed. */
  stop(): Promise<Record<ProcessKind, number>>;
}

/**
 * SIGKILLs, after a pause of `minMs` to `maxMs` each time, the processes `choose` names (one, or several at
 * once), until stopped.
 */
export function startKiller(stack: ChaosStack, minMs: number, maxMs: number, choose: () => ProcessName[] | Promise<ProcessName[]>): Killer {
  const kills: Record<ProcessKind, number> = { core: 0, gateway: 0, worker: 0 };
  let killing = true;
  const loop = (async () => {
    while (killing) {
      await sleep(minMs + Math.random() * (maxMs - minMs));
      if (!killing) break;
      for (const name of await choose())
        if (stack.kill(name)) {
          kills[kindOf(name)]++;
          noteFault(kindOf(name), `SIGKILL of a ${kindOf(name)}`);
        }
    }
  })();
  return {
    kills,
    async stop() {
      killing = false;
      await loop;
      return kills;
    },
  };
}

/** A process picked at random among `names`. */
export const anyOf = (names: readonly ProcessName[]): ProcessName[] => [names[Math.floor(Math.random() * names.length)]!];
