import { EventEmitter } from "node:events";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { ConfigError } from "./environment.js";
import { runProcess, type ProcessDefinition, type ProcessHost } from "./process.js";
import { RELEASE } from "./release.js";

/** A process as the lifecycle sees it: signals to raise, a launcher pipe to close, what it wrote and how it exited. */
function fakeProcess(env: Record<string, string> = {}) {
  const signals = new EventEmitter();
  const stdin = new PassThrough();
  const stderr: string[] = [];
  const logged: string[] = [];
  let settle: (code: number) => void = () => {};
  const exited = new Promise<number>((resolve) => {
    settle = resolve;
  });
  const exits: number[] = [];
  const host: ProcessHost = {
    env,
    stdin,
    stderr: { write: (text: string) => stderr.push(text) },
    on: (signal, listener) => signals.on(signal, listener),
    exit: (code) => {
      exits.push(code);
      settle(code);
    },
  };
  const logger = { info: (_fields: object, message: string) => logged.push(message), error: (_fields: object, message: string) => logged.push(message) };
  return { host, signals, stdin, stderr, logged, logger, exited, exits };
}

type Config = { supervised: boolean };

/** A service whose stop is counted and can be made to fail. */
function definition(fake: ReturnType<typeof fakeProcess>, overrides: Partial<ProcessDefinition<Config, typeof fake.logger, { stop(): Promise<void> }>> = {}) {
  const calls = { started: 0, stopped: 0 };
  const defined: ProcessDefinition<Config, typeof fake.logger, { stop(): Promise<void> }> = {
    name: "rms-probe",
    config: (env) => ({ supervised: env["RMS_SUPERVISED"] === "1" }),
    logger: () => fake.logger,
    start: async () => {
      calls.started++;
      return {
        async stop() {
          calls.stopped++;
        },
      };
    },
    ...overrides,
  };
  return { defined, calls };
}

describe("runProcess", () => {
  it("SIGTERM stops the service once and exits 0; a second signal while stopping is ignored", async () => {
    const fake = fakeProcess();
    const { defined, calls } = definition(fake);
    await runProcess(defined, fake.host);
    expect(calls).toEqual({ started: 1, stopped: 0 });
    fake.signals.emit("SIGTERM");
    fake.signals.emit("SIGINT");
    expect(await fake.exited).toBe(0);
    expect(calls.stopped).toBe(1);
    expect(fake.exits).toEqual([0]);
    expect(fake.logged).toEqual([`rms-probe ${RELEASE} starting`, "stopping", "stopped"]);
  });

  it("SIGINT stops it the same way", async () => {
    const fake = fakeProcess();
    const { defined, calls } = definition(fake);
    await runProcess(defined, fake.host);
    fake.signals.emit("SIGINT");
    expect(await fake.exited).toBe(0);
    expect(calls.stopped).toBe(1);
  });

  it("supervised: the end of the launcher's pipe (the launcher is gone, even killed) stops it with exit 0", async () => {
    const fake = fakeProcess({ RMS_SUPERVISED: "1" });
    const { defined, calls } = definition(fake);
    await runProcess(defined, fake.host);
    fake.stdin.end();
    expect(await fake.exited).toBe(0);
    expect(calls.stopped).toBe(1);
  });

  it("not supervised: stdin is left alone (its end stops nothing)", async () => {
    const fake = fakeProcess();
    const { defined, calls } = definition(fake);
    await runProcess(defined, fake.host);
    expect(fake.stdin.listenerCount("end")).toBe(0);
    expect(fake.stdin.readableFlowing).toBeNull();
    expect(calls.stopped).toBe(0);
    expect(fake.exits).toEqual([]);
  });

  it("a stop that fails is logged and exits 1", async () => {
    const fake = fakeProcess();
    const { defined } = definition(fake, {
      start: async () => ({
        stop: () => Promise.reject(new Error("database gone")),
      }),
    });
    await runProcess(defined, fake.host);
    fake.signals.emit("SIGTERM");
    expect(await fake.exited).toBe(1);
    expect(fake.logged).toEqual([`rms-probe ${RELEASE} starting`, "stopping", "stop failed"]);
  });

  it("a bad variable is one line on stderr and exit 2; nothing starts", async () => {
    const fake = fakeProcess();
    const { defined, calls } = definition(fake, {
      config: () => {
        throw new ConfigError("PORT must be a port number");
      },
    });
    await runProcess(defined, fake.host);
    expect(fake.exits).toEqual([2]);
    expect(fake.stderr).toEqual(["rms-probe: PORT must be a port number\n"]);
    expect(calls.started).toBe(0);
  });

  it("a start that fails is one line on stderr and in the log, and exit 1; no signal handler is left", async () => {
    const fake = fakeProcess();
    const { defined } = definition(fake, {
      start: () => Promise.reject(new Error("address in use")),
    });
    await runProcess(defined, fake.host);
    expect(fake.exits).toEqual([1]);
    expect(fake.stderr).toEqual(["rms-probe: failed to start: address in use\n"]);
    expect(fake.logged).toEqual([`rms-probe ${RELEASE} starting`, "failed to start"]);
    expect(fake.signals.listenerCount("SIGTERM")).toBe(0);
  });
});
