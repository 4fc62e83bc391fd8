// A refused upload answers instead of breaking the pipe: refusals known from the headers come before `100 Continue`,
// a refusal mid-body comes with `Connection: close` while the server reads and drops the rest (transport/linger.ts).
// Real clients against the real stack: curl (when installed) and Node's https client.
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { connect as connectTls } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { installedTool } from "@rms/test-db/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../../testutil/harness.js";

/** A quota small enough to fill: refusals for the quota are tried on an account that holds it all. */
const QUOTA = 1_000_000;
/** The refused file: 30 MB, its type neither JSONL nor CSV (decided from its part's headers, mid-body). */
const BIG = 30 * 1024 * 1024;
const TRIES = 6;

let stack: Stack;
let key: string;
let dir: string;
let caFile: string;
let bigFile: string;
let big: { body: Buffer; type: string };
beforeAll(async () => {
  stack = await startStack({ coreSettings: { filesQuotaBytes: QUOTA } });
  ({ key } = await withSecretKey(stack));
  dir = await mkdtemp(join(tmpdir(), "rms-refusals-"));
  caFile = join(dir, "ca.pem");
  await writeFile(caFile, stack.gateway.certificate);
  bigFile = join(dir, "big.xml");
  const bytes = Buffer.alloc(BIG, "<row/>\n");
  await writeFile(bigFile, bytes);
  big = await multipart(bytes, "big.xml");
});
afterAll(async () => {
  await stack?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function multipart(bytes: Buffer, filename: string): Promise<{ body: Buffer; type: string }> {
  const form = new FormData();
  form.append("purpose", "resources_import");
  form.append("file", new Blob([bytes], { type: "application/octet-stream" }), filename);
  const response = new Response(form);
  return { body: Buffer.from(await response.arrayBuffer()), type: response.headers.get("content-type")! };
}

interface Answer {
  status: number;
  json: { error?: { code: string; type: string } } & Record<string, unknown>;
  /** Whether `100 Continue` came. */
  continued: boolean;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * Node's https client as a program would use it: the body written in 64 KiB pieces as the socket takes them (after
 * `100 Continue` when it sends `Expect: 100-continue`; stopped once an answer came, as Node's client then closes),
 * the answer read whole.
 */
function nodeUpload(path: string, options: { secret: string; body: Buffer; type: string; expect: boolean }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let continued = false;
    const req = request({
      host: "127.0.0.1",
      servername: "localhost",
      port: stack.gateway.httpsPort,
      path,
      method: "POST",
      ca: stack.gateway.certificate,
      agent: false,
      headers: {
        authorization: `Bearer ${options.secret}`,
        "content-type": options.type,
        "content-length": String(options.body.length),
        ...(options.expect ? { expect: "100-continue" } : {}),
      },
    });
    let answered = false;
    const send = async () => {
      for (let at = 0; at < options.body.length && !answered && !req.destroyed; at += 64 * 1024) {
        if (!req.write(options.body.subarray(at, at + 64 * 1024))) await new Promise((drained) => req.once("drain", drained));
      }
      if (!answered && !req.destroyed) req.end();
    };
    req.on("continue", () => {
      continued = true;
      void send();
    });
    req.on("response", (res) => {
      answered = true;
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (piece: string) => (text += piece));
      res.on("end", () => {
        resolve({ status: res.statusCode!, json: text ? JSON.parse(text) : {}, continued, headers: res.headers });
        req.destroy();
      });
      res.on("error", reject);
    });
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    if (!options.expect) void send();
  });
}

/**
 * A client that sends the whole body before it reads the answer, as python-requests and urllib3 do (over a TLS
 * socket of its own): the request's head, `100 Continue` awaited when it asks for it, every byte of the body, then
 * the answer. A server that closes the connection with the body unread resets it, and this client's writes fail
 * (curl's `Send failure: Broken pipe`, exit 55) or its read does: it rejects, the answer lost.
 */
function wholeBodyUpload(path: string, options: { secret: string; body: Buffer; type: string; expect: boolean }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connectTls({ host: "127.0.0.1", port: stack.gateway.httpsPort, servername: "localhost", ca: stack.gateway.certificate });
    socket.on("error", reject);
    let text = "";
    let continued = false;
    const read = () => {
      socket.on("data", (piece: Buffer) => (text += piece.toString("latin1")));
      socket.on("end", () => {
        const at = text.indexOf("\r\n\r\n");
        const head = text.slice(0, at);
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
        const headers = Object.fromEntries(
          head
            .split("\r\n")
            .slice(1)
            .map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]),
        );
        const body = text.slice(at + 4);
        resolve({ status, json: body ? JSON.parse(body) : {}, continued, headers });
        socket.destroy();
      });
      socket.resume();
    };
    const sendBody = async () => {
      for (let at = 0; at < options.body.length; at += 64 * 1024) {
        if (!socket.write(options.body.subarray(at, at + 64 * 1024))) await new Promise((drained) => socket.once("drain", drained));
      }
      read();
    };
    socket.once("secureConnect", () => {
      const expect = options.expect ? "Expect: 100-continue\r\n" : "";
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${options.secret}\r\nContent-Type: ${options.type}\r\nContent-Length: ` +
          `${options.body.length}\r\n${expect}\r\n`,
      );
      if (!options.expect) return void sendBody().catch(reject);
      // The interim answer, read on its own; the final one is read after the body, as such a client does.
      let interim = "";
      const onInterim = (piece: Buffer) => {
        interim += piece.toString("latin1");
        if (!interim.includes("\r\n\r\n")) return;
        socket.off("data", onInterim);
        socket.pause();
        continued = interim.startsWith("HTTP/1.1 100 ");
        if (continued) void sendBody().catch(reject);
        else {
          text = interim;
          read();
        }
      };
      socket.on("data", onInterim);
    });
  });
}

/** curl as a user runs it: `-F` fields, `Expect: 100-continue` or none (`Expect:`); its exit code and what it printed. */
function curlUpload(curl: string, path: string, options: { secret: string; expect: boolean; form: string[] }) {
  const port = stack.gateway.httpsPort;
  const args = ["-sS", "-v", "--cacert", caFile, "--resolve", `localhost:${port}:127.0.0.1`, "-H", `Authorization: Bearer ${options.secret}`];
  args.push("-H", options.expect ? "Expect: 100-continue" : "Expect:", "-w", "\n%{http_code}");
  for (const field of options.form) args.push("-F", field);
  args.push(`https://localhost:${port}${path}`);
  return new Promise<{ exit: number | null; status: number; json: Answer["json"]; continued: boolean; stderr: string }>((resolve) => {
    const child = spawn(curl, args);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (piece: Buffer) => (stdout += piece.toString()));
    child.stderr.on("data", (piece: Buffer) => (stderr += piece.toString()));
    child.on("close", (exit) => {
      const at = stdout.lastIndexOf("\n");
      const body = stdout.slice(0, at);
      resolve({
        exit,
        status: Number(stdout.slice(at + 1)),
        json: body ? JSON.parse(body) : {},
        continued: /^< HTTP\/1\.1 100 Continue/m.test(stderr),
        stderr,
      });
    });
  });
}

describe("a 30 MB multipart refused for its type (mid-body): the 400 every time", () => {
  for (const expectContinue of [false, true]) {
    it(`Node's https client, ${expectContinue ? "with" : "without"} Expect: 100-continue`, async () => {
      for (let i = 0; i < TRIES; i++) {
        const answer = await nodeUpload("/v1/files", { secret: key, body: big.body, type: big.type, expect: expectContinue });
        expect(answer.status).toBe(400);
        expect(answer.json.error).toMatchObject({ code: "file_type_invalid", type: "invalid_request_error" });
        expect(answer.continued).toBe(expectContinue);
      }
    });

    it(`a client that sends the whole body before it reads (as python-requests), ${expectContinue ? "with" : "without"} Expect: 100-continue`, async () => {
      for (let i = 0; i < TRIES; i++) {
        const answer = await wholeBodyUpload("/v1/files", { secret: key, body: big.body, type: big.type, expect: expectContinue });
        expect(answer.status).toBe(400);
        expect(answer.json.error).toMatchObject({ code: "file_type_invalid", type: "invalid_request_error" });
        expect(answer.headers.connection).toBe("close");
        // The type is in the part's headers: the body was asked for first.
        expect(answer.continued).toBe(expectContinue);
      }
    });

    it(`curl, ${expectContinue ? "with" : "without"} Expect: 100-continue`, async (context) => {
      const curl = installedTool("curl", "CURL");
      if (!curl) return context.skip("curl is not installed");
      for (let i = 0; i < TRIES; i++) {
        const answer = await curlUpload(curl, "/v1/files", { secret: key, expect: expectContinue, form: ["purpose=resources_import", `file=@${bigFile}`] });
        expect(answer.exit, answer.stderr.slice(-2000)).toBe(0);
        expect(answer.status).toBe(400);
        expect(answer.json.error).toMatchObject({ code: "file_type_invalid" });
      }
    });
  }
});

describe("Expect: 100-continue: a refusal the headers decide comes instead of 100 Continue", () => {
  it("a bad key: 401, never 100 Continue (Node and curl)", async (context) => {
    const answer = await nodeUpload("/v1/files", { secret: "sk_test_not_a_key_0000000000000000", body: big.body, type: big.type, expect: true });
    expect(answer.status).toBe(401);
    expect(answer.continued).toBe(false);
    const curl = installedTool("curl", "CURL");
    if (!curl) return context.skip("curl is not installed");
    const byCurl = await curlUpload(curl, "/v1/files", {
      secret: "sk_test_not_a_key_0000000000000000",
      expect: true,
      form: ["purpose=resources_import", `file=@${bigFile}`],
    });
    expect(byCurl.exit, byCurl.stderr.slice(-2000)).toBe(0);
    expect(byCurl.status).toBe(401);
    expect(byCurl.continued).toBe(false);
  });

  it("a key without files:write: 403; a body that is not multipart: 415; neither sent 100 Continue", async () => {
    const account = await stack.newAccount();
    const reader = (await account.key("restricted", "test", { scopes: ["files:read"] })).secret;
    const scoped = await nodeUpload("/v1/files", { secret: reader, body: big.body, type: big.type, expect: true });
    expect(scoped).toMatchObject({ status: 403, continued: false });
    const notMultipart = await nodeUpload("/v1/files", { secret: key, body: big.body, type: "application/json", expect: true });
    expect(notMultipart).toMatchObject({ status: 415, continued: false });
  });

  it("past the quota: POST /v1/files and a part are 400 limit_exceeded before 100 Continue; a part of a missing upload 404", async () => {
    const { key: full } = await withSecretKey(stack);
    const upload = await stack.api.post("/v1/uploads", { key: full, json: { purpose: "resources_import", filename: "later.jsonl", bytes: 10, type: "jsonl" } });
    expect(upload.status).toBe(201);
    const filled = await multipart(Buffer.alloc(QUOTA, "\n"), "fill.jsonl");
    expect((await stack.api.post("/v1/files", { key: full, body: filled.body, headers: { "content-type": filled.type } })).status).toBe(201);
    const listed = await stack.api.get("/v1/files", { key: full });
    expect(listed.json).toMatchObject({ used_bytes: QUOTA, quota_bytes: QUOTA });

    const file = await multipart(Buffer.from('{"name":"x"}\n'), "one.jsonl");
    const refused = await nodeUpload("/v1/files", { secret: full, body: file.body, type: file.type, expect: true });
    expect(refused).toMatchObject({ status: 400, continued: false, json: { error: { code: "limit_exceeded" } } });
    const part = await nodeUpload(`/v1/uploads/${upload.json.id}/parts`, {
      secret: full,
      body: Buffer.from("0123456789"),
      type: "application/octet-stream",
      expect: true,
    });
    expect(part).toMatchObject({ status: 400, continued: false, json: { error: { code: "limit_exceeded" } } });
    const missing = await nodeUpload("/v1/uploads/upl_0000000000000000000000/parts", {
      secret: full,
      body: Buffer.from("x"),
      type: "application/octet-stream",
      expect: true,
    });
    expect(missing).toMatchObject({ status: 404, continued: false });

    // With room, a part under Expect: 100-continue gets its 100 Continue once core asked for the bytes, then 201.
    const { key: roomy } = await withSecretKey(stack);
    const open = await stack.api.post("/v1/uploads", { key: roomy, json: { purpose: "resources_import", filename: "ok.jsonl", bytes: 10, type: "jsonl" } });
    const accepted = await nodeUpload(`/v1/uploads/${open.json.id}/parts`, {
      secret: roomy,
      body: Buffer.from("0123456789"),
      type: "application/octet-stream",
      expect: true,
    });
    expect(accepted).toMatchObject({ status: 201, continued: true, json: { object: "upload.part", size: 10 } });
    const whole = await nodeUpload("/v1/files", { secret: roomy, body: file.body, type: file.type, expect: true });
    expect(whole).toMatchObject({ status: 201, continued: true, json: { object: "file" } });
  });
});
