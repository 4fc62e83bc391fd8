// FileService and DashboardSessionService called as an operator would, with grpcurl over server reflection (no
// .proto files): the client-streaming upload under an Idempotency-Key, the download stream, a dashboard session.
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { installedTool } from "@rms/test-db/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startTestCore, type TestCore } from "./testutil/harness.js";
import { masterKey } from "./webhooks/index.js";

/** grpcurl from GRPCURL, the PATH or Go's bin directory (`go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.1`). */
const GRPCURL = installedTool("grpcurl", "GRPCURL");

let t: TestCore;
let address: string;
beforeAll(async () => {
  if (!GRPCURL) return;
  t = await startTestCore({ settings: { secretKeyring: { primary: masterKey(Buffer.alloc(32, 5)) } } });
  address = t.core.address;
});
afterAll(() => t?.stop());

/**
 * One grpcurl run (`-v`: headers and trailers are printed too); its exit status and output. Asynchronous: core
 * serves from this very process, so a synchronous spawn would block it from answering.
 */
function grpcurl(args: string[], input?: string, headers: Record<string, string> | null = {}): Promise<{ status: number | null; out: string }> {
  const all = headers === null ? {} : { authorization: `Bearer ${ADMIN_TOKEN}`, ...headers };
  const headerArgs = Object.entries(all).flatMap(([name, value]) => ["-H", `${name}: ${value}`]);
  const child = spawn(GRPCURL!, ["-plaintext", ...headerArgs, ...(input === undefined ? [] : ["-d", "@"]), ...args], { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (piece: Buffer) => (out += piece.toString("utf8")));
  child.stderr.on("data", (piece: Buffer) => (out += piece.toString("utf8")));
  child.stdin.end(input ?? "");
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (status) => resolve({ status, out }));
  });
}

/** The JSON messages of an upload stream, one per line, as grpcurl reads them from its input. */
function uploadInput(tenant: { accountId: string; livemode: boolean }, bytes: Buffer): string {
  const messages = [
    { start: { tenant, purpose: "resources_import", filename: "grpcurl.jsonl", type: "jsonl" } },
    ...[0, 1].map((half) => ({ data: bytes.subarray(half * (bytes.length / 2), (half + 1) * (bytes.length / 2)).toString("base64") })),
    { end: { size: String(bytes.length) } },
  ];
  return messages.map((m) => JSON.stringify(m)).join("\n");
}

/** The first JSON object grpcurl printed. */
function firstJson(out: string): Record<string, unknown> {
  const start = out.indexOf("{");
  let depth = 0;
  for (let at = start; at < out.length; at++) {
    if (out[at] === "{") depth++;
    if (out[at] === "}" && --depth === 0) return JSON.parse(out.slice(start, at + 1)) as Record<string, unknown>;
  }
  throw new Error(`no JSON in grpcurl's output: ${out}`);
}

describe.skipIf(!GRPCURL)("grpcurl (skipped when grpcurl is not installed: GRPCURL=<path>, the PATH or ~/go/bin)", () => {
  it("lists and describes FileService and DashboardSessionService through reflection; UploadFile is client-streaming, ReadFile server-streaming", async () => {
    const list = await grpcurl([address, "list"]);
    expect(list.status).toBe(0);
    expect(list.out).toContain("rms.v1.FileService");
    expect(list.out).toContain("rms.v1.DashboardSessionService");
    const files = await grpcurl([address, "describe", "rms.v1.FileService"]);
    expect(files.out).toMatch(/rpc UploadFile \( stream \.rms\.v1\.UploadFileRequest \) returns \( \.rms\.v1\.UploadFileResponse \)/);
    expect(files.out).toMatch(/rpc ReadFile \( \.rms\.v1\.ReadFileRequest \) returns \( stream \.rms\.v1\.ReadFileResponse \)/);
    expect((await grpcurl([address, "describe", "rms.v1.DashboardSessionService"])).out).toContain("rpc CreateDashboardSession");
  });

  it("UploadFile under an Idempotency-Key: the file, its repeat replayed (rms-replay trailer), other bytes reused; ReadFile streams it back", async () => {
    const account = await t.newAccount();
    const bytes = Buffer.from(Array.from({ length: 500 }, (_, i) => `{"name":"grpcurl ${i}"}\n`).join(""));
    const key = { "idempotency-key": `grpcurl-${randomBytes(4).toString("hex")}` };
    const first = await grpcurl(["-v", address, "rms.v1.FileService/UploadFile"], uploadInput(account.test, bytes), key);
    expect(first.status).toBe(0);
    const file = firstJson(first.out)["file"] as Record<string, unknown>;
    expect(file).toMatchObject({
      purpose: "resources_import",
      filename: "grpcurl.jsonl",
      size: String(bytes.length),
      sha256: createHash("sha256").update(bytes).digest("hex"),
    });
    expect(first.out).not.toContain("rms-replay");
    const again = await grpcurl(["-v", address, "rms.v1.FileService/UploadFile"], uploadInput(account.test, bytes), key);
    expect(again.status).toBe(0);
    expect((firstJson(again.out)["file"] as Record<string, unknown>)["id"]).toBe(file["id"]);
    expect(again.out).toMatch(/rms-replay: \{"requestId"/);
    const other = await grpcurl(
      ["-v", address, "rms.v1.FileService/UploadFile"],
      uploadInput(account.test, Buffer.from(`${bytes.toString()}{"name":"more"}\n`)),
      key,
    );
    expect(other.status).not.toBe(0);
    expect(other.out).toContain("idempotency_key_reused");
    expect(await t.db.collection("files").countDocuments({ account: account.id })).toBe(1);

    const read = await grpcurl([address, "rms.v1.FileService/ReadFile"], JSON.stringify({ tenant: account.test, id: file["id"] }));
    expect(read.status).toBe(0);
    const data = [...read.out.matchAll(/"data": "([A-Za-z0-9+/=]+)"/g)].map((m) => Buffer.from(m[1]!, "base64"));
    expect(Buffer.concat(data).equals(bytes)).toBe(true);
  });

  it("CreateDashboardSession with the admin token under an Idempotency-Key: one key, the repeat its answer again", async () => {
    const account = await t.newAccount();
    const key = { "idempotency-key": `grpcurl-dash-${randomBytes(4).toString("hex")}` };
    const request = JSON.stringify({ tenant: account.test, expiresIn: "600" });
    const first = await grpcurl(["-v", address, "rms.v1.DashboardSessionService/CreateDashboardSession"], request, key);
    expect(first.status).toBe(0);
    const made = firstJson(first.out);
    expect(made["secret"]).toMatch(/^rk_test_/);
    const again = await grpcurl(["-v", address, "rms.v1.DashboardSessionService/CreateDashboardSession"], request, key);
    expect(firstJson(again.out)["secret"]).toBe(made["secret"]);
    expect(again.out).toMatch(/rms-replay: \{"requestId"/);
    const { keys } = await t.admin.listKeys({ accountId: account.id });
    expect(keys.filter((k) => k.kind === t.KeyKind.RESTRICTED)).toHaveLength(1);
    // Without the admin token (or a gateway's presented key) the call is refused.
    const refused = await grpcurl([address, "rms.v1.DashboardSessionService/CreateDashboardSession"], request, null);
    expect(refused.status).not.toBe(0);
    expect(refused.out).toMatch(/Unauthenticated|PermissionDenied/);
  });
});
