import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { Agent } from "node:https";
import { connect as connectTls } from "node:tls";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { eventually } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../../testutil/harness.js";
import { stripePython } from "../../testutil/stripe-python.js";

const MAX = 3 * 1024 * 1024;
let stack: Stack;
let key: string;
let mongo: MongoClient;
beforeAll(async () => {
  stack = await startStack({ gateway: { filesMaxBytes: MAX } });
  ({ key } = await withSecretKey(stack));
  mongo = await new MongoClient(stack.mongoUri).connect();
});
afterAll(async () => {
  await mongo?.close();
  await stack?.stop();
});

const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
const db = () => mongo.db(stack.databaseName);

/** A multipart body as a browser or an SDK sends it (fields in the order given). */
async function multipart(fields: [string, string | { data: Buffer; filename?: string; type?: string }][]): Promise<{ body: Buffer; type: string }> {
  const form = new FormData();
  for (const [name, value] of fields) {
    if (typeof value === "string") form.append(name, value);
    else form.append(name, new Blob([value.data], { type: value.type ?? "application/octet-stream" }), value.filename);
  }
  const response = new Response(form);
  return { body: Buffer.from(await response.arrayBuffer()), type: response.headers.get("content-type")! };
}

async function upload(bytes: Buffer, filename = "rows.jsonl", options: { key?: string; headers?: Record<string, string>; purpose?: string } = {}) {
  const { body, type } = await multipart([
    ["purpose", options.purpose ?? "resources_import"],
    ["file", { data: bytes, filename }],
  ]);
  return stack.api.post("/v1/files", { key: options.key ?? key, body, headers: { "content-type": type, ...options.headers } });
}

const rows = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => `{"name":"row ${i}"}\n`).join(""));

describe("POST /v1/files and downloads", () => {
  it("uploads multipart (purpose, file), answers the file object, downloads it whole and by range with ETag, lists and deletes it", async () => {
    const bytes = rows(20_000);
    const created = await upload(bytes);
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      object: "file",
      purpose: "resources_import",
      filename: "rows.jsonl",
      type: "jsonl",
      size: bytes.length,
      sha256: sha(bytes),
      livemode: false,
    });
    const file = created.json;
    expect(file.url).toBe(`/v1/files/${file.id}/contents`);
    expect(file.expires_at - file.created).toBe(7 * 24 * 3600);
    expect((await stack.api.get(`/v1/files/${file.id}`, { key })).json).toEqual(file);

    const whole = await stack.api.get(file.url, { key });
    expect(whole.status).toBe(200);
    expect(whole.text).toBe(bytes.toString());
    expect(whole.headers).toMatchObject({
      "content-type": "application/x-ndjson",
      "content-length": String(bytes.length),
      "content-disposition": `attachment; filename="rows.jsonl"; filename*=UTF-8''rows.jsonl`,
      etag: `"${sha(bytes)}"`,
      "accept-ranges": "bytes",
    });
    const ranged = await stack.api.get(file.url, { key, headers: { range: "bytes=100-199" } });
    expect(ranged.status).toBe(206);
    expect(ranged.text).toBe(bytes.subarray(100, 200).toString());
    expect(ranged.headers).toMatchObject({ "content-range": `bytes 100-199/${bytes.length}`, "content-length": "100" });
    const resumed = await stack.api.get(file.url, { key, headers: { range: `bytes=${bytes.length - 10}-` } });
    expect(resumed.text).toBe(bytes.subarray(bytes.length - 10).toString());
    const suffix = await stack.api.get(file.url, { key, headers: { range: "bytes=-5" } });
    expect(suffix.text).toBe(bytes.subarray(bytes.length - 5).toString());
    const unsatisfiable = await stack.api.get(file.url, { key, headers: { range: `bytes=${bytes.length}-` } });
    expect(unsatisfiable.status).toBe(416);
    expect(unsatisfiable.json.error.code).toBe("range_not_satisfiable");
    expect(unsatisfiable.headers["content-range"]).toBe(`bytes */${bytes.length}`);
    const notModified = await stack.api.get(file.url, { key, headers: { "if-none-match": `"${sha(bytes)}"` } });
    expect(notModified.status).toBe(304);
    // Several ranges, or a malformed header: ignored, the whole file.
    expect((await stack.api.get(file.url, { key, headers: { range: "bytes=0-1,5-6" } })).status).toBe(200);
    const empty = (await upload(Buffer.alloc(0), "empty.jsonl")).json;
    expect(empty.size).toBe(0);
    expect((await stack.api.get(empty.url, { key })).text).toBe("");
    expect((await stack.api.get(empty.url, { key, headers: { range: "bytes=0-" } })).status).toBe(416);

    const listed = await stack.api.get("/v1/files?purpose=resources_import&limit=100", { key });
    expect(listed.json).toMatchObject({ object: "list", url: "/v1/files" });
    expect(listed.json.data.map((f: { id: string }) => f.id)).toContain(file.id);
    expect((await stack.api.get("/v1/files?purpose=job_results", { key })).json.data).toEqual([]);
    const deleted = await stack.api.delete(`/v1/files/${file.id}`, { key });
    expect(deleted.json).toEqual({ id: file.id, object: "file", deleted: true });
    expect((await stack.api.get(`/v1/files/${file.id}`, { key })).status).toBe(404);
    expect((await stack.api.get(file.url, { key })).status).toBe(404);
  });

  it(
    "a CSV by its content type; form and JSON bodies are 415; a file part without " + "a filename, a wrong type, a missing purpose or an unknown field are 400",
    async () => {
      const csv = await multipart([
        ["purpose", "resources_import"],
        ["file", { data: Buffer.from("name\nx\n"), filename: "export", type: "text/csv" }],
      ]);
      const created = await stack.api.post("/v1/files", { key, body: csv.body, headers: { "content-type": csv.type } });
      // A name without its type's extension gets it (docs/files.md, "Filename").
      expect(created.json).toMatchObject({ type: "csv", filename: "export.csv" });
      expect((await stack.api.get(`/v1/files/${created.json.id}/contents`, { key })).headers["content-type"]).toBe("text/csv; charset=utf-8");
      // `purpose` after the file is taken too (it goes to core with the upload's end).
      const late = await multipart([
        ["file", { data: Buffer.from("name\nlate\n"), filename: "late.csv" }],
        ["purpose", "resources_import"],
      ]);
      expect((await stack.api.post("/v1/files", { key, body: late.body, headers: { "content-type": late.type } })).json).toMatchObject({
        object: "file",
        filename: "late.csv",
        purpose: "resources_import",
      });

      expect((await stack.api.post("/v1/files", { key, form: { purpose: "resources_import" } })).json.error.code).toBe("unsupported_media_type");
      expect((await stack.api.post("/v1/files", { key, json: { purpose: "resources_import" } })).status).toBe(415);
      const cases: [Parameters<typeof multipart>[0], string, string][] = [
        [
          [
            ["purpose", "resources_import"],
            ["file", { data: Buffer.from("x"), filename: "a.xml" }],
          ],
          "file_type_invalid",
          "file",
        ],
        [[["file", { data: Buffer.from("x"), filename: "a.jsonl" }]], "parameter_missing", "purpose"],
        [[["purpose", "resources_import"]], "parameter_missing", "file"],
        [
          [
            ["purpose", "resources_import"],
            ["color", "red"],
            ["file", { data: Buffer.from("x"), filename: "a.jsonl" }],
          ],
          "parameter_unknown",
          "color",
        ],
        [
          [
            ["purpose", "job_results"],
            ["file", { data: Buffer.from("x"), filename: "a.jsonl" }],
          ],
          "parameter_invalid",
          "purpose",
        ],
        [
          [
            ["purpose", "resources_import"],
            ["file", { data: Buffer.from("x"), filename: "a.jsonl" }],
            ["extra", "1"],
          ],
          "parameter_unknown",
          "extra",
        ],
      ];
      for (const [fields, code, param] of cases) {
        const { body, type } = await multipart(fields);
        const answer = await stack.api.post("/v1/files", { key, body, headers: { "content-type": type } });
        expect(answer.json.error, JSON.stringify(fields.map((f) => f[0]))).toMatchObject({ code, param });
      }
    },
  );

  it("a name keeps the extension its type implies: report.html sent as text/csv is report.html.csv, stored and served", async () => {
    const csv = await multipart([
      ["purpose", "resources_import"],
      ["file", { data: Buffer.from("name\n<script>x</script>\n"), filename: "report.html", type: "text/csv" }],
    ]);
    const created = await stack.api.post("/v1/files", { key, body: csv.body, headers: { "content-type": csv.type } });
    expect(created.json).toMatchObject({ type: "csv", filename: "report.html.csv" });
    const served = await stack.api.get(created.json.url, { key });
    expect(served.headers["content-disposition"]).toBe(`attachment; filename="report.html.csv"; filename*=UTF-8''report.html.csv`);
    // The type's own extensions, in any case, are kept as they are; a name at the length limit is cut to fit.
    expect((await upload(rows(1), "Rows.NDJSON")).json.filename).toBe("Rows.NDJSON");
    const long = `${"n".repeat(253)}.x`;
    const named = await multipart([
      ["purpose", "resources_import"],
      ["file", { data: rows(1), filename: long, type: "application/x-ndjson" }],
    ]);
    const longFile = (await stack.api.post("/v1/files", { key, body: named.body, headers: { "content-type": named.type } })).json;
    expect(longFile.filename).toBe(`${"n".repeat(249)}.jsonl`);
    // Uploads in parts: the name given at the create, by the declared type.
    const parts = await stack.api.post("/v1/uploads", { key, json: { purpose: "resources_import", filename: "page.html", bytes: 5, type: "jsonl" } });
    expect(parts.json.filename).toBe("page.html.jsonl");
  });

  it("a Range past int64 answers 416 or the whole file, never 500", async () => {
    const bytes = rows(10);
    const file = (await upload(bytes)).json;
    const huge = "99999999999999999999";
    const past = await stack.api.get(file.url, { key, headers: { range: `bytes=${huge}-` } });
    expect(past.status).toBe(416);
    expect(past.headers["content-range"]).toBe(`bytes */${bytes.length}`);
    expect((await stack.api.get(file.url, { key, headers: { range: `bytes=${huge}-${huge}9` } })).status).toBe(416);
    for (const range of [`bytes=0-${huge}`, `bytes=-${huge}`, `bytes=0-9223372036854775807`, "bytes=-9223372036854775808"]) {
      const whole = await stack.api.get(file.url, { key, headers: { range } });
      expect(whole.status, range).toBe(206);
      expect(whole.text, range).toBe(bytes.toString());
      expect(whole.headers["content-range"], range).toBe(`bytes 0-${bytes.length - 1}/${bytes.length}`);
    }
  });

  it("a wrong purpose names only what may be uploaded", async () => {
    for (const purpose of ["resources_export", "job_results", "nope"]) {
      const answer = await upload(rows(1), "a.jsonl", { purpose });
      expect(answer.status).toBe(400);
      expect(answer.json.error).toMatchObject({ code: "parameter_invalid", param: "purpose" });
      expect(answer.json.error.message).toContain("'resources_import'");
      expect(answer.json.error.message).not.toMatch(/resources_export|job_results/);
      const parts = await stack.api.post("/v1/uploads", { key, json: { purpose, filename: "x.jsonl", bytes: 5, type: "jsonl" } });
      expect(parts.json.error.message).not.toMatch(/resources_export|job_results/);
    }
  });

  it("past FILES_MAX_BYTES: 413 request_too_large and nothing kept", async () => {
    const { id: account } = await stack.newAccount().then(async (a) => ({ id: a.id, key: (await a.key()).secret }));
    void account;
    const before = await db().collection("file_blob_chunks").countDocuments();
    const answer = await upload(randomBytes(MAX + 1), "big.jsonl");
    expect(answer.status).toBe(413);
    expect(answer.json.error.code).toBe("request_too_large");
    // Nothing kept: no open blob is left behind (the chunks written before the limit are discarded).
    await eventually(async () => expect(await db().collection("file_blobs").countDocuments({ state: "open" })).toBe(0));
    expect(await db().collection("file_blob_chunks").countDocuments()).toBe(before);
  });

  it("a client that disconnects mid-upload leaves no file and no chunk", async () => {
    const beforeFiles = await db().collection("files").countDocuments();
    const beforeChunks = await db().collection("file_blob_chunks").countDocuments();
    const { body, type } = await multipart([
      ["purpose", "resources_import"],
      ["file", { data: randomBytes(2 * 1024 * 1024), filename: "cut.jsonl" }],
    ]);
    const socket = connectTls({ host: "127.0.0.1", port: stack.gateway.httpsPort, ca: stack.gateway.certificate, servername: "localhost" });
    await new Promise<void>((resolve, reject) => socket.once("secureConnect", resolve).once("error", reject));
    socket.write(
      `POST /v1/files HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nContent-Type: ${type}\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    // More than a chunk (1 MiB) goes in, so core has written chunks before the client goes.
    socket.write(body.subarray(0, 1_600_000));
    await eventually(async () => expect(await db().collection("file_blob_chunks").countDocuments()).toBeGreaterThan(beforeChunks));
    socket.destroy();
    // The discard deletes the chunks, then the blob's document.
    await eventually(async () => {
      expect(await db().collection("file_blob_chunks").countDocuments()).toBe(beforeChunks);
      expect(await db().collection("file_blobs").countDocuments({ state: "open" })).toBe(0);
    });
    expect(await db().collection("files").countDocuments()).toBe(beforeFiles);
  });

  it(
    "an Idempotency-Key repeat with the same bytes answers the first file (core's key protocol, rpc.upload); other bytes under the key are " +
      "idempotency_key_reused",
    async () => {
      const bytes = rows(100);
      const first = await upload(bytes, "same.jsonl", { headers: { "idempotency-key": "file-once" } });
      const again = await upload(bytes, "same.jsonl", { headers: { "idempotency-key": "file-once" } });
      expect(again.status).toBe(201);
      expect(again.text).toBe(first.text);
      const other = await upload(rows(101), "same.jsonl", { headers: { "idempotency-key": "file-once" } });
      expect(other.status).toBe(400);
      expect(other.json.error.code).toBe("idempotency_key_reused");
      expect(await db().collection("files").countDocuments({ filename: "same.jsonl" })).toBe(1);
    },
  );

  it("tenancy and modes: another account's or mode's file is 404 everywhere; scopes: files:read reads, files:write uploads and deletes", async () => {
    const file = (await upload(rows(3), "mine.jsonl")).json;
    const other = await stack.newAccount();
    const otherKey = (await other.key()).secret;
    const mine = await stack.newAccount();
    void mine;
    for (const secret of [otherKey, (await withSecretKey(stack, "live")).key]) {
      expect((await stack.api.get(`/v1/files/${file.id}`, { key: secret })).status).toBe(404);
      expect((await stack.api.get(`/v1/files/${file.id}/contents`, { key: secret })).status).toBe(404);
      expect((await stack.api.delete(`/v1/files/${file.id}`, { key: secret })).status).toBe(404);
    }
    const account = await stack.newAccount();
    const reader = (await account.key("restricted", "test", { scopes: ["files:read"] })).secret;
    const writer = (await account.key("restricted", "test", { scopes: ["files:write"] })).secret;
    const outsider = (await account.key("restricted", "test", { scopes: ["resources:read"] })).secret;
    const publishable = (await account.key("publishable", "test")).secret;
    const theirs = (await upload(rows(2), "theirs.jsonl", { key: writer })).json;
    expect(theirs.object).toBe("file");
    expect((await stack.api.get(`/v1/files/${theirs.id}/contents`, { key: writer })).status).toBe(200); // files:write implies files:read
    expect((await stack.api.get(`/v1/files/${theirs.id}`, { key: reader })).status).toBe(200);
    expect((await upload(rows(2), "no.jsonl", { key: reader })).json.error.code).toBe("insufficient_scope");
    expect((await stack.api.delete(`/v1/files/${theirs.id}`, { key: reader })).json.error.code).toBe("insufficient_scope");
    expect((await stack.api.get("/v1/files", { key: outsider })).json.error.code).toBe("insufficient_scope");
    expect((await stack.api.get("/v1/files", { key: publishable })).status).toBe(403);
  });
});

describe("uploads in parts", () => {
  it("create, parts in parallel and in any order, complete by ids in file order, download the whole; cancel; errors", async () => {
    const pieces = [randomBytes(1_500_000), randomBytes(10), randomBytes(700_000)];
    const whole = Buffer.concat(pieces);
    const created = await stack.api.post("/v1/uploads", {
      key,
      form: { purpose: "resources_import", filename: "parts.csv", bytes: String(whole.length), type: "csv" },
    });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      object: "upload",
      status: "pending",
      bytes: whole.length,
      filename: "parts.csv",
      purpose: "resources_import",
      file: null,
    });
    const upl = created.json.id as string;
    const send = (bytes: Buffer) => stack.api.post(`/v1/uploads/${upl}/parts`, { key, body: bytes, headers: { "content-type": "application/octet-stream" } });
    const [p3, p1, p2] = await Promise.all([send(pieces[2]!), send(pieces[0]!), send(pieces[1]!)]);
    expect(p1!.status).toBe(201);
    expect(p1!.json).toMatchObject({ object: "upload.part", upload: upl, size: pieces[0]!.length, sha256: sha(pieces[0]!) });
    expect((await stack.api.post(`/v1/uploads/${upl}/parts`, { key, json: { a: 1 } })).status).toBe(415);
    const short = await stack.api.post(`/v1/uploads/${upl}/complete`, { key, json: { part_ids: [p1!.json.id, p2!.json.id] } });
    expect(short.json.error).toMatchObject({ code: "upload_incomplete" });
    const completed = await stack.api.post(`/v1/uploads/${upl}/complete`, {
      key,
      form: `part_ids[]=${p1!.json.id}&part_ids[]=${p2!.json.id}&part_ids[]=${p3!.json.id}`,
    });
    expect(completed.status).toBe(200);
    expect(completed.json).toMatchObject({ status: "completed", file: { object: "file", size: whole.length, sha256: sha(whole), type: "csv" } });
    const download = await stack.api.get(completed.json.file.url, { key, headers: { range: "bytes=1499990-1500019" } });
    expect(Buffer.from(download.text, "latin1").length).toBeGreaterThan(0);
    expect((await stack.api.get(`/v1/uploads/${upl}`, { key })).json).toEqual(completed.json);

    const other = await stack.api.post("/v1/uploads", { key, json: { purpose: "resources_import", filename: "x.jsonl", bytes: 5, type: "jsonl" } });
    const canceled = await stack.api.post(`/v1/uploads/${other.json.id}/cancel`, { key });
    expect(canceled.json.status).toBe("canceled");
    expect((await stack.api.post(`/v1/uploads/${other.json.id}/cancel`, { key })).status).toBe(409);
    expect(
      (await stack.api.post("/v1/uploads", { key, json: { purpose: "resources_import", filename: "x.jsonl", bytes: 9 * 1024 ** 3, type: "jsonl" } })).json.error
        .param,
    ).toBe("bytes");
  });
});

describe("the parts of an upload and the account's storage", () => {
  it(
    "five parts of 10 bytes on bytes=10: the first is 201, the others 400 " + "limit_exceeded; the first sent again is the same part; the list answers the use",
    async () => {
      const { key: own } = await withSecretKey(stack);
      const created = await stack.api.post("/v1/uploads", { key: own, json: { purpose: "resources_import", filename: "ten.jsonl", bytes: 10, type: "jsonl" } });
      const send = (text: string) =>
        stack.api.post(`/v1/uploads/${created.json.id}/parts`, { key: own, body: Buffer.from(text), headers: { "content-type": "application/octet-stream" } });
      const first = await send("0123456789");
      expect(first.status).toBe(201);
      for (const digit of "1234") {
        const other = await send(digit.repeat(10));
        expect(other.status).toBe(400);
        expect(other.json.error).toMatchObject({ code: "limit_exceeded", type: "invalid_request_error" });
      }
      const again = await send("0123456789");
      expect(again.status).toBe(201);
      expect(again.json).toEqual(first.json);
      expect((await stack.api.get("/v1/files", { key: own })).json).toMatchObject({ object: "list", used_bytes: 10, quota_bytes: 10 * 1024 ** 3, data: [] });
      const completed = await stack.api.post(`/v1/uploads/${created.json.id}/complete`, { key: own, json: { part_ids: [first.json.id] } });
      expect(completed.json.file).toMatchObject({ size: 10, filename: "ten.jsonl" });
      const listed = (await stack.api.get("/v1/files", { key: own })).json;
      expect(Object.keys(listed)).toEqual(["object", "url", "has_more", "used_bytes", "quota_bytes", "data"]);
      expect(listed).toMatchObject({ used_bytes: 10, data: [{ id: completed.json.file.id }] });
    },
  );
});

describe("Stripe's SDKs upload with their own multipart encoders", () => {
  it("stripe-node: files.create with the host pointed at the gateway", async () => {
    const stripe = new Stripe(key, {
      host: "127.0.0.1",
      port: stack.gateway.httpsPort,
      protocol: "https",
      httpAgent: new Agent({ ca: stack.gateway.certificate }),
    });
    const bytes = rows(50);
    const file = await stripe.files.create({
      purpose: "resources_import" as never,
      file: { data: bytes, name: "node.jsonl", type: "application/octet-stream" },
    });
    expect(file).toMatchObject({ object: "file", filename: "node.jsonl", size: bytes.length, type: "jsonl" });
    expect((file as unknown as { sha256: string }).sha256).toBe(sha(bytes));
  });

  it("stripe-python: stripe.File.create with upload_api_base pointed at the gateway, sent again with its idempotency_key a replay, other bytes under " +
    "it 400 reused (stripe-python 16.1.0 installed once into the cache, or STRIPE_PYTHON_PATH=<dir>)", async (context) => {
    const python = await stripePython();
    if ("unavailable" in python) {
      context.skip(`stripe-python cannot be installed here: ${python.unavailable}`);
      return;
    }
    const env = { ...process.env, PYTHONPATH: python.path };
    const dir = await mkdtemp(join(tmpdir(), "rms-files-py-"));
    try {
      const ca = join(dir, "ca.pem");
      const data = join(dir, "python.csv");
      const bytes = Buffer.from("name,status\npy one,active\n");
      const keyedData = join(dir, "keyed", "python.csv");
      const keyedBytes = Buffer.from("name,status\npy keyed,active\n");
      const otherData = join(dir, "other", "python.csv");
      await writeFile(ca, stack.gateway.certificate);
      await writeFile(data, bytes);
      await mkdir(dirname(keyedData));
      await writeFile(keyedData, keyedBytes);
      await mkdir(dirname(otherData));
      await writeFile(otherData, Buffer.from("name,status\npy other,active\n"));
      // The same filename under the key, other bytes: only the bytes differ from the first request.
      const script = [
        "import json, os, stripe",
        "stripe.api_key = os.environ['KEY']",
        "stripe.api_base = os.environ['BASE']",
        "stripe.upload_api_base = os.environ['BASE']",
        "stripe.ca_bundle_path = os.environ['CA']",
        "def create(path, **options):",
        "    with open(path, 'rb') as fp:",
        "        return stripe.File.create(purpose='resources_import', file=fp, **options)",
        "def answered(f):",
        "    r = f.last_response",
        "    return {'id': f.id, 'status': r.code, 'request_id': r.request_id, 'replayed': r.headers.get('Idempotent-Replayed'), 'original': " +
          "r.headers.get('Original-Request')}",
        "f = create(os.environ['DATA'])",
        "out = {'file': {'id': f.id, 'object': f.object, 'size': f.size, 'type': f.type, 'filename': f.filename, 'sha256': f['sha256']}}",
        "out['first'] = answered(create(os.environ['KEYED'], idempotency_key='py-file-1'))",
        "out['again'] = answered(create(os.environ['KEYED'], idempotency_key='py-file-1'))",
        "try:",
        "    create(os.environ['OTHER'], idempotency_key='py-file-1')",
        "    out['other'] = 'created'",
        "except stripe.error.IdempotencyError as e:",
        "    out['other'] = {'status': e.http_status, 'type': e.error.type, 'code': e.error.code}",
        "print(json.dumps(out))",
      ].join("\n");
      // Not spawnSync: the gateway answering it runs in this process.
      const child = spawn("python3", ["-c", script], {
        env: { ...env, KEY: key, BASE: `https://localhost:${stack.gateway.httpsPort}`, CA: ca, DATA: data, KEYED: keyedData, OTHER: otherData },
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      await new Promise((resolve) => child.once("close", resolve));
      const run = { stdout, stderr };
      expect(run.stderr).toBe("");
      const answers = JSON.parse(run.stdout);
      expect(answers.file).toMatchObject({ object: "file", size: bytes.length, type: "csv", filename: "python.csv", sha256: sha(bytes) });
      expect(answers.first).toMatchObject({ status: 201, replayed: null, original: null });
      expect(answers.again).toEqual({
        id: answers.first.id,
        status: 201,
        request_id: expect.stringMatching(/^req_/),
        replayed: "true",
        original: answers.first.request_id,
      });
      expect(answers.again.request_id).not.toBe(answers.first.request_id);
      expect(answers.other).toEqual({ status: 400, type: "idempotency_error", code: "idempotency_key_reused" });
      expect(
        await db()
          .collection("files")
          .countDocuments({ filename: "python.csv", sha256: sha(keyedBytes) }),
      ).toBe(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    // The first run on a machine installs the wheels (pip, a few seconds; more on a busy machine).
  }, 120_000);
});
