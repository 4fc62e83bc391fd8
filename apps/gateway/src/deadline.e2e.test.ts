import { Writable } from "node:stream";
import { Server, ServerCredentials } from "@grpc/grpc-js";
import { AdminService, KeyKind, ResourceService, addService } from "@rms/proto";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CORE_CALL_TIMEOUT_MS, connectCore } from "./core.js";
import { GATEWAY_TOKEN, startStack, type Stack } from "./testutil/harness.js";

// A core that is up but never answers an operation (hung, or far behind its database): the gateway's call runs
// past its deadline. The answer stays the contract's (503 service_unavailable for a read, 500 outcome_unknown for a
// write, which may have reached core), and the log line says what happened: deadline exceeded, not "unreachable".

const lines: { msg: string; request_id?: string; [field: string]: unknown }[] = [];
const logger = pino(
  { level: "info" },
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(line) as (typeof lines)[number]);
      done();
    },
  }),
);

/** Answers every method of `service` with `answer(name)`, or never when that is undefined. */
function stubbed(answer: (method: string) => (() => Promise<unknown>) | undefined) {
  return new Proxy({}, { get: (_target, method: string) => answer(method) ?? (() => new Promise(() => undefined)) }) as never;
}

let stub: Server;
let t: Stack;
beforeAll(async () => {
  stub = new Server();
  // The key is accepted (as a secret key of acct_stub); every resource call is left without an answer.
  const principal = { key: { id: "key_stub", accountId: "acct_stub", kind: KeyKind.SECRET, livemode: false, scopes: [] } };
  addService(
    stub,
    AdminService,
    stubbed((method) => (method === "verifyKey" ? () => Promise.resolve(principal) : undefined)),
  );
  addService(
    stub,
    ResourceService,
    stubbed(() => undefined),
  );
  const port = await new Promise<number>((resolve, reject) =>
    stub.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  t = await startStack({ logs: { gateway: logger }, wrapCore: () => connectCore(`127.0.0.1:${port}`, GATEWAY_TOKEN) });
});
afterAll(async () => {
  await t?.stop();
  stub?.forceShutdown();
});

describe("a core call that runs past its deadline", () => {
  it(
    "is 503 service_unavailable (read) or 500 outcome_unknown (write) as before, and its log line says deadline exceeded",
    async () => {
      const key = `sk_test_${"s".repeat(32)}`;
      const started = Date.now();
      const [read, write] = await Promise.all([
        t.api.get("/v1/resources/res_00000000000000000000aa", { key }),
        t.api.post("/v1/resources", { key, json: { name: "x" } }),
      ]);
      console.log(
        `answers after ${Date.now() - started} ms (core call deadline ${CORE_CALL_TIMEOUT_MS} ms): ${read.status} ${read.json.error.code}, ` +
          `${write.status} ${write.json.error.code}`,
      );
      expect([read.status, read.json.error.code, read.headers["retry-after"]]).toEqual([503, "service_unavailable", "1"]);
      expect([write.status, write.json.error.code]).toEqual([500, "outcome_unknown"]);
      for (const answer of [read, write]) {
        const line = lines.find((l) => l.request_id === answer.json.error.request_id && l.msg.startsWith("deadline exceeded"));
        expect(line, `log line of ${answer.json.error.request_id}`).toMatchObject({ level: 40, grpc_code: 4, code: answer.json.error.code });
        expect(String(line?.["cause"])).toMatch(/deadline/i);
      }
    },
    CORE_CALL_TIMEOUT_MS + 30_000,
  );
});
