import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "./testutil/harness.js";

/** Every JSON line a logger writes, kept in memory. */
function captured() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString("utf8")
          .split("\n")
          .filter((line) => line !== ""),
      );
      done();
    },
  });
  return { lines, logger: pino({ level: "trace" }, stream) };
}

async function metricsText(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(response.status).toBe(200);
  return response.text();
}

const gatewayLogs = captured();
const coreLogs = captured();
let stack: Stack;
let key: string;
beforeAll(async () => {
  stack = await startStack({ logs: { gateway: gatewayLogs.logger, core: coreLogs.logger } });
  ({ key } = await withSecretKey(stack));
});
afterAll(() => stack.stop());

describe("logs", () => {
  it("follows one request id from the gateway's access line to each of core's call lines", async () => {
    const created = await stack.api.post("/v1/resources", { key, form: { name: "traced" } });
    expect(created.status).toBe(201);
    const requestId = created.headers["request-id"]!;
    expect(requestId).toMatch(/^req_/);
    const retrieved = await stack.api.get(`/v1/resources/${created.json.id}`, { key });
    const retrieveId = retrieved.headers["request-id"]!;
    const status = await stack.api.get("/v1/status");
    expect(status.status).toBe(200);

    const core = coreLogs.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const callsOf = (id: string) => core.filter((line) => line["request_id"] === id && line["msg"] === "call").map((line) => line["method"]);
    expect(callsOf(requestId)).toEqual(["/rms.v1.AdminService/VerifyKey", "/rms.v1.ResourceService/CreateResource"]);
    // The key was verified by the first request; the second makes only its operation call.
    expect(callsOf(retrieveId)).toEqual(["/rms.v1.ResourceService/GetResource"]);
    const gateway = gatewayLogs.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(gateway).toContainEqual(expect.objectContaining({ msg: "request", request_id: requestId, method: "POST", status: 201 }));
  });

  it("names the key, its account and mode on every request line, and the error code of an error", async () => {
    const { account, key: liveKey } = await withSecretKey(stack, "live");
    const created = await stack.api.post("/v1/resources", { key: liveKey, form: { name: "logged" } });
    const missing = await stack.api.get("/v1/resources/res_0000000000000000000000", { key: liveKey });
    const anonymous = await stack.api.get("/v1/resources");
    const lineOf = (response: { headers: Record<string, string | undefined> }) =>
      gatewayLogs.lines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((line) => line["msg"] === "request" && line["request_id"] === response.headers["request-id"]);
    const keyId = (await stack.admin.verifyKey({ secret: liveKey })).key!.id;
    expect(lineOf(created)).toMatchObject({ status: 201, key_id: keyId, account: account.id, livemode: true });
    expect(lineOf(created)).not.toHaveProperty("code");
    expect(lineOf(missing)).toMatchObject({ status: 404, key_id: keyId, account: account.id, livemode: true, code: "resource_missing" });
    expect(lineOf(anonymous)).toMatchObject({ status: 401, key_id: null, account: null, livemode: null, code: "api_key_missing" });
  });

  it("never writes a key, whatever happens to the request", async () => {
    const account = await stack.newAccount();
    const leaked = (await account.key("secret", "test")).secret;
    const publishable = (await account.key("publishable", "test")).secret;
    await stack.api.get("/v1/resources", { key });
    await stack.api.post("/v1/resources", { key: publishable, form: { name: "refused" } });
    await stack.api.get("/v1/resources", { key: `${key.slice(0, -1)}x` });
    await stack.api.post("/v1/resources", { key, json: { name: "" } });
    await stack.api.get("/v1/resources/res_unknown", { key, headers: { authorization: `Basic ${Buffer.from(`${key}:`).toString("base64")}` } });
    const plain = await stack.plain.post("/v1/resources", { key: leaked, form: { name: "over http" } });
    expect(plain.status).toBe(403);
    expect((await stack.api.get("/v1/resources", { key: leaked })).json.error.code).toBe("api_key_revoked");
    expect(coreLogs.lines.some((line) => line.includes("key revoked"))).toBe(true);

    const all = [...gatewayLogs.lines, ...coreLogs.lines];
    expect(all.length).toBeGreaterThan(10);
    for (const secret of [key, leaked, publishable, key.slice(8)]) {
      expect(all.filter((line) => line.includes(secret))).toEqual([]);
    }
  });
});

describe("metrics", () => {
  it("counts and times gateway requests by route pattern and status on the operator port", async () => {
    const created = await stack.api.post("/v1/resources", { key, form: { name: "counted" } });
    await stack.api.get(`/v1/resources/${created.json.id}`, { key });
    await stack.api.get("/v1/nowhere", { key });
    const text = await metricsText(stack.gateway.metricsPort);
    expect(text).toContain('http_requests_total{method="POST",route="/v1/resources",status="201"}');
    expect(text).toContain('http_requests_total{method="GET",route="/v1/resources/:id",status="200"}');
    expect(text).toContain('http_requests_total{method="GET",route="unmatched",status="404"}');
    expect(text).toMatch(/http_request_duration_seconds_bucket\{le="[^"]+",method="GET",route="\/v1\/resources\/:id",status="200"\}/);
    expect(text).toContain("process_resident_memory_bytes");
    // Raw paths never become labels.
    expect(text).not.toContain(created.json.id);
    expect(text).not.toContain("/v1/nowhere");
  });

  it("counts gRPC calls by method, client and code and times database commands in core", async () => {
    await stack.api.post("/v1/resources", { key, form: { name: "in core" } });
    await stack.api.get("/v1/resources/res_0000000000000000000000", { key });
    const text = await metricsText(stack.coreMetricsPort);
    expect(text).toMatch(
      /grpc_server_handled_total\{grpc_type="unary",grpc_service="rms.v1.ResourceService",grpc_method="CreateResource",client="gateway",grpc_code="OK"\} [1-9]/,
    );
    expect(text).toMatch(
      new RegExp(
        'grpc_server_handled_total\\{grpc_type="unary",grpc_service="rms.v1.ResourceService",grpc_method="GetResource",client="gateway",' +
          'grpc_code="NOT_FOUND"\\} [1-9]',
      ),
    );
    expect(text).toMatch(
      /grpc_server_handling_seconds_bucket\{le="[^"]+",grpc_type="unary",grpc_service="rms.v1.ResourceService",grpc_method="CreateResource",client="gateway"\}/,
    );
    expect(text).toMatch(/mongodb_command_duration_seconds_count\{command="insert",outcome="ok"\} [1-9]/);
    expect(text).toMatch(/mongodb_command_duration_seconds_count\{command="find",outcome="ok"\} [1-9]/);
  });

  it("serves nothing else on the metrics port", async () => {
    expect((await fetch(`http://127.0.0.1:${stack.gateway.metricsPort}/v1/status`)).status).toBe(404);
  });
});
