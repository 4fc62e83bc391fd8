import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { eventually } from "@rms/test-db/testkit";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { type CliProcess, type DeveloperStack, runRms, startDeveloperStack } from "../testutil/developer-stack.js";

/*
 * `rms listen`, `rms trigger` and `rms logs tail` as a developer runs them: real processes of the CLI against real
 * processes of the stack. The CLI gets only RMS_API_KEY, RMS_API_BASE (https://localhost:<port>) and RMS_DATA_DIR,
 * so it trusts the development certificate by itself, as it does for `npm start`.
 */

let stack: DeveloperStack;
beforeAll(async () => {
  stack = await startDeveloperStack({ name: "developer-cli", worker: true });
});
afterAll(() => stack?.stop());

/**
 * A webhook receiver that verifies each delivery with the `standardwebhooks` library and the secrets `rms listen`
 * printed (each session has its own). A delivery may arrive before the test has read its session's Ready line, so
 * one that no known secret verifies is tried again for a while before it is refused.
 */
class Receiver {
  readonly verified: { id: string; type: string; object: string; secret: string }[] = [];
  readonly refused: string[] = [];
  private readonly server: Server;

  constructor(secrets: () => string[]) {
    this.server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", async () => {
        for (let tries = 0; tries < 50; tries++) {
          for (const secret of secrets()) {
            try {
              const headers = req.headers as IncomingHttpHeaders & Record<string, string>;
              const event = new Webhook(secret).verify(body, headers) as { id: string; type: string; data: { object: { id: string } } };
              this.verified.push({ id: event.id, type: event.type, object: event.data.object.id, secret });
              res.writeHead(200).end("ok");
              return;
            } catch {
              // another session's secret (or a forgery): the next one
            }
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        this.refused.push(String(req.headers["webhook-id"]));
        res.writeHead(400).end();
      });
    });
  }

  async listen(): Promise<string> {
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  close() {
    this.server.close();
  }
}

/** Every `rms listen` of the test file, for the secrets they printed. */
const listens: CliProcess[] = [];
const printedSecrets = () => listens.flatMap((listen) => [...listen.stdout().matchAll(/whsec_[A-Za-z0-9+/]{43}=/g)].map((m) => m[0]));

/** Starts `rms listen` and waits for its first line; answers the process and the session's secret. */
async function startListen(args: string[]): Promise<{ listen: CliProcess; secret: string }> {
  const listen = runRms(["listen", ...args], stack.cliEnv);
  listens.push(listen);
  onTestFinished(async () => {
    await listen.kill();
  });
  const ready = args.includes("--json")
    ? /^\{"type":"ready","secret":"(whsec_[A-Za-z0-9+/]{43}=)","request_id":"req_\w+"\}$/m
    : /^Ready! Your webhook signing secret is (whsec_[A-Za-z0-9+/]{43}=) \(\^C to quit\)$/m;
  const [first, secret] = await listen.waitFor(ready);
  expect(listen.lines()[0]).toBe(first);
  return { listen, secret: secret! };
}

/** Makes `n` resources through the API, four at a time; answers their ids. */
async function makeResources(n: number, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < n) {
        const i = next++;
        ids.push(await stack.createResource(`${prefix} ${i}`));
      }
    }),
  );
  return ids;
}

describe("rms listen --forward-to", () => {
  it("forwards 100 events made through the API, each verified once with the printed secret; killed and restarted with --since, the events made " +
    "meanwhile arrive", async () => {
    const receiver = new Receiver(printedSecrets);
    onTestFinished(() => receiver.close());
    const url = await receiver.listen();

    const first = await startListen(["--forward-to", url, "--events", "resource.created"]);
    const made = await makeResources(100, "listened");
    await eventually(() => expect(receiver.verified.length).toBeGreaterThanOrEqual(100), { timeoutMs: 120_000, intervalMs: 200 });
    expect(receiver.refused).toEqual([]);
    expect(receiver.verified.map((e) => e.object).sort()).toEqual([...made].sort());
    expect(new Set(receiver.verified.map((e) => e.id)).size).toBe(100);
    expect(receiver.verified.every((e) => e.secret === first.secret)).toBe(true);
    // One line per event and one per answer, in that order.
    await eventually(() => expect(first.listen.lines().filter((line) => line.startsWith("<-- "))).toHaveLength(100));
    const lines = first.listen.lines().slice(1);
    for (const [n, event] of receiver.verified.entries()) {
      expect(lines[2 * n]).toBe(`--> resource.created [${event.id}]`);
      expect(lines[2 * n + 1]).toBe(`<-- [200] POST ${url} [${event.id}]`);
    }

    // Killed (no goodbye), events made meanwhile, started again after the last event it printed.
    const last = /\[(evt_[0-9A-Za-z]+)\]$/.exec(lines.at(-1)!)![1]!;
    expect(await first.listen.kill("SIGKILL")).toBeNull();
    const meanwhile = await makeResources(20, "while listen was down");
    const second = await startListen(["--forward-to", url, "--events", "resource.created", "--since", last]);
    expect(second.secret).not.toBe(first.secret);
    await eventually(() => expect(receiver.verified.length).toBeGreaterThanOrEqual(120), { timeoutMs: 60_000, intervalMs: 200 }).catch(async (error) => {
      const got = new Set(receiver.verified.map((e) => e.object));
      const missing = meanwhile.filter((id) => !got.has(id));
      const listed = await Promise.all(missing.map((id) => stack.call("GET", `/v1/events?object=${id}`).then((r) => r.body)));
      throw new Error(
        `${error}\nmissing ${missing.join(", ")}; their events: ${listed.join("\n")}\nsecond listen:\n${second.listen.stdout()}${second.listen.stderr()}`,
      );
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(receiver.refused).toEqual([]);
    expect(
      receiver.verified
        .slice(100)
        .map((e) => e.object)
        .sort(),
    ).toEqual([...meanwhile].sort());
    expect(receiver.verified.slice(100).every((e) => e.secret === second.secret)).toBe(true);
    expect(receiver.verified).toHaveLength(120);
  }, 300_000);
});

describe("rms trigger", () => {
  it("resource.created makes a resource, and listen prints its event", async () => {
    const { listen } = await startListen([]);
    const trigger = runRms(["trigger", "resource.created", "--json"], stack.cliEnv);
    expect(await trigger.exited).toBe(0);
    const [resource, result] = trigger.lines().map((line) => JSON.parse(line));
    expect(resource).toMatchObject({ object: "resource", id: expect.stringMatching(/^res_/), name: "rms trigger resource.created" });
    expect(result).toMatchObject({ object: "trigger", type: "resource.created", event: expect.stringMatching(/^evt_/), data_object: resource.id });
    await listen.waitFor(new RegExp(`^--> resource\\.created \\[${result.event}\\]$`, "m"));
    const fetched = await stack.call("GET", `/v1/resources/${resource.id}`);
    expect(fetched.status).toBe(200);
  }, 120_000);

  it("each event type it knows makes the change that emits it, with a line for what it made", async () => {
    const { listen } = await startListen(["--json"]);
    for (const type of ["resource.updated", "resource.deleted", "job.succeeded", "job.failed", "job.canceled", "webhook_endpoint.disabled"]) {
      const trigger = runRms(["trigger", type], stack.cliEnv);
      const code = await trigger.exited;
      expect(code, `rms trigger ${type}:\n${trigger.stdout()}${trigger.stderr()}`).toBe(0);
      const [, event] = trigger.stdout().match(/^Trigger succeeded! \S+ \[(evt_[0-9A-Za-z]+)\]$/m) ?? [];
      expect(event, trigger.stdout()).toBeDefined();
      console.log(`rms trigger ${type}:\n${trigger.stdout()}`);
      await eventually(
        () => {
          const printed = listen
            .lines()
            .map((line) => JSON.parse(line))
            .find((line) => line.type === "event" && line.event.id === event);
          expect(printed?.event.type).toBe(type);
        },
        { timeoutMs: 30_000 },
      );
    }
  }, 300_000);

  it("refuses a live key before making anything", async () => {
    const trigger = runRms(["trigger", "resource.created", "--api-key", `sk_live_${"x".repeat(32)}`], stack.cliEnv);
    expect(await trigger.exited).toBe(2);
    expect(trigger.stderr()).toMatch(/test-mode key only/);
  });
});

describe("rms logs tail", () => {
  it("--status 4xx prints a 404 made after it started, and not the 200 beside it", async () => {
    const tail = runRms(["logs", "tail", "--status", "4xx"], stack.cliEnv);
    onTestFinished(async () => {
      await tail.kill();
    });
    await tail.waitFor(/^Ready! Tailing request logs/m, "stderr");
    const missing = await stack.call("GET", "/v1/resources/res_0000000000000000000000");
    expect(missing.status).toBe(404);
    const found = await stack.call("GET", "/v1/resources?limit=1");
    expect(found.status).toBe(200);
    const notFoundId = missing.headers["request-id"] as string;
    const line = await tail.waitFor(new RegExp(`^.*\\[404\\] GET /v1/resources/res_0000000000000000000000 \\[${notFoundId}\\] resource_missing.*$`, "m"));
    console.log(`rms logs tail: ${line[0]}`);
    // Recorded in the same batch or before the 404's: had the 200 passed the filter, it would be printed by now.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(tail.stdout()).not.toContain(found.headers["request-id"] as string);
    expect(await tail.kill("SIGINT")).toBe(0);
  }, 120_000);

  it("--json prints each request log as the API shows it", async () => {
    const tail = runRms(["logs", "tail", "--json", "--method", "DELETE"], stack.cliEnv);
    onTestFinished(async () => {
      await tail.kill();
    });
    await tail.waitFor(/^Ready!/m, "stderr");
    const id = await stack.createResource("deleted for the tail");
    const deleted = await stack.call("DELETE", `/v1/resources/${id}`);
    expect(deleted.status).toBe(200);
    await tail.waitFor(/^\{.*\}$/m);
    const log = JSON.parse(tail.lines()[0]!);
    expect(log).toMatchObject({
      object: "request_log",
      id: deleted.headers["request-id"],
      method: "DELETE",
      path: `/v1/resources/${id}`,
      status: 200,
      source: "api",
    });
  }, 120_000);
});
