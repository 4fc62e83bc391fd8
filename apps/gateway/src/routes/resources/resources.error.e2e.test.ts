import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiResponse } from "../../testutil/client.js";
import { startStack, type Stack } from "../../testutil/harness.js";

// Every error row the resources API can produce, through the real stack.
let stack: Stack;
let keys: { secret: string; publishable: string; readOnly: string; expired: string; revoked: string };
let resourceId: string;
beforeAll(async () => {
  stack = await startStack();
  const account = await stack.newAccount();
  const revoked = await account.key("secret");
  keys = {
    secret: (await account.key("secret")).secret,
    publishable: (await account.key("publishable")).secret,
    readOnly: (await account.key("restricted", "test", { scopes: ["resources:read"] })).secret,
    expired: (await account.key("restricted", "test", { scopes: ["resources:read"], expiresAt: Math.floor(Date.now() / 1000) - 60 })).secret,
    revoked: revoked.secret,
  };
  await stack.admin.revokeKey({ keyId: revoked.id, reason: "test" });
  resourceId = (await stack.api.post("/v1/resources", { key: keys.secret, json: { name: "exists" } })).json.id;
});
afterAll(() => stack.stop());

interface Row {
  readonly name: string;
  readonly send: () => Promise<ApiResponse>;
  readonly status: number;
  readonly type: string;
  readonly code: string;
  readonly param?: string;
  readonly headers?: Record<string, string>;
}

const post = (path: string, opts: Parameters<Stack["api"]["post"]>[1]) => stack.api.post(path, { key: keys.secret, ...opts });
const list = (query: string) => stack.api.get(`/v1/resources?${query}`, { key: keys.secret });
const search = (query: string) => stack.api.get(`/v1/resources/search?${query}`, { key: keys.secret });
const q = (query: string) => `query=${encodeURIComponent(query)}`;
const ids = (n: number) => Array.from({ length: n }, (_, i) => `ids[]=res_${String(i).padStart(22, "0")}`).join("&");
/** A well-formed page token of a query other than the one sent with it. */
const otherPage = Buffer.from(`1.res_${"0".repeat(22)}.AAAAAAAAAAAAAAAA`).toString("base64url");
const bad = "invalid_request_error";

const rows: Row[] = [
  // 400
  { name: "create without name", send: () => post("/v1/resources", { form: {} }), status: 400, type: bad, code: "parameter_missing", param: "name" },
  { name: "empty name", send: () => post("/v1/resources", { form: { name: "" } }), status: 400, type: bad, code: "parameter_invalid_empty", param: "name" },
  {
    name: "name of 201 code points",
    send: () => post("/v1/resources", { json: { name: "é".repeat(201) } }),
    status: 400,
    type: bad,
    code: "string_too_long",
    param: "name",
  },
  {
    name: "name not a string (JSON)",
    send: () => post("/v1/resources", { json: { name: 42 } }),
    status: 400,
    type: bad,
    code: "parameter_invalid",
    param: "name",
  },
  { name: "name as a form array", send: () => post("/v1/resources", { form: "name[]=a" }), status: 400, type: bad, code: "parameter_invalid", param: "name" },
  {
    name: "unknown status",
    send: () => post("/v1/resources", { form: { name: "n", status: "deleted" } }),
    status: 400,
    type: bad,
    code: "parameter_invalid",
    param: "status",
  },
  {
    name: "unknown parameter",
    send: () => post("/v1/resources", { form: "name=n&colour=red&size=2" }),
    status: 400,
    type: bad,
    code: "parameter_unknown",
    param: "colour",
  },
  {
    name: "__proto__ as a parameter",
    send: () => post("/v1/resources", { form: "name=n&__proto__[x]=1" }),
    status: 400,
    type: bad,
    code: "parameter_unknown",
    param: "__proto__",
  },
  {
    name: "metadata value null",
    send: () => post("/v1/resources", { json: { name: "n", metadata: { a: null } } }),
    status: 400,
    type: bad,
    code: "metadata_invalid",
    param: "metadata[a]",
  },
  {
    name: "metadata value an object",
    send: () => post("/v1/resources", { form: "name=n&metadata[a][b]=c" }),
    status: 400,
    type: bad,
    code: "metadata_invalid",
    param: "metadata[a]",
  },
  {
    name: "metadata an array",
    send: () => post("/v1/resources", { json: { name: "n", metadata: ["a"] } }),
    status: 400,
    type: bad,
    code: "metadata_invalid",
    param: "metadata",
  },
  {
    name: "metadata with 51 keys",
    send: () => post("/v1/resources", { json: { name: "n", metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, "v"])) } }),
    status: 400,
    type: bad,
    code: "metadata_invalid",
    param: "metadata",
  },
  {
    name: "metadata key of 41 characters",
    send: () => post("/v1/resources", { json: { name: "n", metadata: { ["k".repeat(41)]: "v" } } }),
    status: 400,
    type: bad,
    code: "metadata_invalid",
  },
  {
    name: "metadata value of 501 characters",
    send: () => post("/v1/resources", { json: { name: "n", metadata: { k: "v".repeat(501) } } }),
    status: 400,
    type: bad,
    code: "metadata_invalid",
    param: "metadata[k]",
  },
  { name: "limit 0", send: () => list("limit=0"), status: 400, type: bad, code: "limit_invalid", param: "limit" },
  { name: "limit 101", send: () => list("limit=101"), status: 400, type: bad, code: "limit_invalid", param: "limit" },
  { name: "limit not an integer", send: () => list("limit=2.5"), status: 400, type: bad, code: "limit_invalid", param: "limit" },
  {
    name: "both cursors",
    send: () => list(`starting_after=${resourceId}&ending_before=${resourceId}`),
    status: 400,
    type: bad,
    code: "parameter_invalid",
    param: "ending_before",
  },
  { name: "malformed cursor", send: () => list("starting_after=not_an_id"), status: 400, type: bad, code: "parameter_invalid", param: "starting_after" },
  { name: "unknown list filter", send: () => list("sort=asc"), status: 400, type: bad, code: "parameter_unknown", param: "sort" },
  // The list's filters (CONTRACT.md section 3, "More filters").
  { name: "101 ids", send: () => list(ids(101)), status: 400, type: bad, code: "parameter_invalid", param: "ids" },
  { name: "a malformed id", send: () => list(`ids[]=${resourceId}&ids[]=job_x`), status: 400, type: bad, code: "parameter_invalid", param: "ids[1]" },
  { name: "ids as an object", send: () => list("ids[a]=1"), status: 400, type: bad, code: "parameter_invalid", param: "ids" },
  { name: "two metadata keys", send: () => list("metadata[a]=1&metadata[b]=2"), status: 400, type: bad, code: "parameter_invalid", param: "metadata" },
  { name: "an empty metadata value", send: () => list("metadata[a]="), status: 400, type: bad, code: "parameter_invalid_empty", param: "metadata[a]" },
  { name: 'metadata=""', send: () => list("metadata="), status: 400, type: bad, code: "parameter_invalid_empty", param: "metadata" },
  {
    name: "a metadata key with a bracket (JSON)",
    send: () => stack.api.get("/v1/resources", { key: keys.secret, json: { metadata: { "a]": "1" } } }),
    status: 400,
    type: bad,
    code: "metadata_invalid",
    param: "metadata[a]]",
  },
  { name: "an unknown created bound", send: () => list("created[after]=1"), status: 400, type: bad, code: "parameter_unknown", param: "created[after]" },
  { name: "a created bound not an integer", send: () => list("created[gte]=today"), status: 400, type: bad, code: "parameter_invalid", param: "created[gte]" },
  { name: "created not an object", send: () => list("created=1"), status: 400, type: bad, code: "parameter_invalid", param: "created" },
  { name: "a second status unknown", send: () => list("status[]=active&status[]=gone"), status: 400, type: bad, code: "parameter_invalid", param: "status[1]" },
  { name: "an empty status", send: () => list("status="), status: 400, type: bad, code: "parameter_invalid_empty", param: "status" },
  {
    name: "ids with a malformed cursor",
    send: () => list(`ids[]=${resourceId}&ending_before=nope`),
    status: 400,
    type: bad,
    code: "parameter_invalid",
    param: "ending_before",
  },
  // Search (CONTRACT.md section 3, "Search").
  { name: "search without a query", send: () => search("limit=3"), status: 400, type: bad, code: "parameter_missing", param: "query" },
  { name: "search: an empty query", send: () => search("query="), status: 400, type: bad, code: "parameter_invalid_empty", param: "query" },
  { name: "search: an unknown operator", send: () => search(q("status!'active'")), status: 400, type: bad, code: "search_query_invalid", param: "query" },
  { name: "search: ~ on status", send: () => search(q("status~'ac'")), status: 400, type: bad, code: "search_query_invalid", param: "query" },
  {
    name: "search: OR across fields",
    send: () => search(q("status:'active' OR name~'ab'")),
    status: 400,
    type: bad,
    code: "search_query_invalid",
    param: "query",
  },
  // Found by schemathesis: a character outside the BMP where a token must start. Its error message once quoted
  // half of it, and grpc-js threw on that lone surrogate and ended core (every row after this one needs it).
  {
    name: "search: an emoji where a clause starts",
    send: () => search(q("status:'active' \u{1F600}")),
    status: 400,
    type: bad,
    code: "search_query_invalid",
    param: "query",
  },
  {
    name: "search: 11 clauses",
    send: () => search(q(Array.from({ length: 11 }, (_, i) => `created>${i}`).join(" AND "))),
    status: 400,
    type: bad,
    code: "search_query_invalid",
    param: "query",
  },
  {
    name: "search: a malformed page",
    send: () => search(`${q("status:'active'")}&page=%25%25`),
    status: 400,
    type: bad,
    code: "parameter_invalid",
    param: "page",
  },
  {
    name: "search: a page of another query",
    send: () => search(`${q("status:'active'")}&page=${otherPage}`),
    status: 400,
    type: bad,
    code: "parameter_invalid",
    param: "page",
  },
  { name: "search: limit 0", send: () => search(`${q("status:'active'")}&limit=0`), status: 400, type: bad, code: "limit_invalid", param: "limit" },
  {
    name: "search: an unknown parameter",
    send: () => search(`${q("status:'active'")}&sort=asc`),
    status: 400,
    type: bad,
    code: "parameter_unknown",
    param: "sort",
  },
  {
    name: "parameters on retrieve",
    send: () => stack.api.get(`/v1/resources/${resourceId}?expand=x`, { key: keys.secret }),
    status: 400,
    type: bad,
    code: "parameter_unknown",
    param: "expand",
  },
  {
    name: "nesting deeper than 5",
    send: () => post("/v1/resources", { form: "name=n&metadata[a][b][c][d][e][f]=1" }),
    status: 400,
    type: bad,
    code: "parameter_invalid",
  },
  {
    name: "more than 1,000 parameters",
    send: () => post("/v1/resources", { form: Array.from({ length: 1001 }, (_, i) => `metadata[k${i}]=v`).join("&") }),
    status: 400,
    type: bad,
    code: "parameter_invalid",
  },
  {
    name: "malformed JSON",
    send: () => post("/v1/resources", { body: '{"name":', headers: { "content-type": "application/json" } }),
    status: 400,
    type: bad,
    code: "parameter_invalid",
  },
  // 401
  {
    name: "no key",
    send: () => stack.api.get("/v1/resources"),
    status: 401,
    type: "authentication_error",
    code: "api_key_missing",
    headers: { "www-authenticate": "Bearer" },
  },
  {
    name: "unknown key",
    send: () => stack.api.get("/v1/resources", { key: `sk_test_${"0".repeat(28)}` }),
    status: 401,
    type: "authentication_error",
    code: "api_key_invalid",
    headers: { "www-authenticate": "Bearer" },
  },
  {
    name: "garbage key",
    send: () => stack.api.get("/v1/resources", { key: "hello" }),
    status: 401,
    type: "authentication_error",
    code: "api_key_invalid",
    headers: { "www-authenticate": "Bearer" },
  },
  {
    name: "expired key",
    send: () => stack.api.get("/v1/resources", { key: keys.expired }),
    status: 401,
    type: "authentication_error",
    code: "api_key_expired",
    headers: { "www-authenticate": "Bearer" },
  },
  {
    name: "revoked key",
    send: () => stack.api.get("/v1/resources", { key: keys.revoked }),
    status: 401,
    type: "authentication_error",
    code: "api_key_revoked",
    headers: { "www-authenticate": "Bearer" },
  },
  // 403
  {
    name: "restricted key without the scope",
    send: () => stack.api.post("/v1/resources", { key: keys.readOnly, form: { name: "n" } }),
    status: 403,
    type: "permission_error",
    code: "insufficient_scope",
  },
  {
    name: "publishable key writing",
    send: () => stack.api.post("/v1/resources", { key: keys.publishable, form: { name: "n" } }),
    status: 403,
    type: "permission_error",
    code: "publishable_key_read_only",
  },
  { name: "plain HTTP", send: () => stack.plain.get("/v1/resources", { key: keys.publishable }), status: 403, type: bad, code: "https_required" },
  // 404
  {
    name: "unknown id",
    send: () => stack.api.get("/v1/resources/res_0000000000000000000000", { key: keys.secret }),
    status: 404,
    type: bad,
    code: "resource_missing",
    param: "id",
  },
  { name: "malformed id", send: () => stack.api.get("/v1/resources/xyz", { key: keys.secret }), status: 404, type: bad, code: "resource_missing", param: "id" },
  { name: "unknown path", send: () => stack.api.get("/v1/resource", { key: keys.secret }), status: 404, type: bad, code: "route_missing" },
  // 405
  {
    name: "wrong verb",
    send: () => stack.api.send("PUT", `/v1/resources/${resourceId}`, { key: keys.secret }),
    status: 405,
    type: bad,
    code: "method_not_allowed",
    headers: { allow: "GET, POST, DELETE" },
  },
  {
    name: "POST on search (not taken for an update of a resource 'search')",
    send: () => post("/v1/resources/search", { form: { name: "x" } }),
    status: 405,
    type: bad,
    code: "method_not_allowed",
    headers: { allow: "GET" },
  },
  {
    name: "wrong verb on the collection",
    send: () => stack.api.send("DELETE", "/v1/resources", { key: keys.secret }),
    status: 405,
    type: bad,
    code: "method_not_allowed",
    headers: { allow: "GET, POST" },
  },
  // 413, 415
  {
    name: "body over 1 MiB",
    send: () => post("/v1/resources", { json: { name: "n", pad: "x".repeat(1024 * 1024) } }),
    status: 413,
    type: bad,
    code: "request_too_large",
  },
  {
    name: "other content type",
    send: () => post("/v1/resources", { body: "name: n", headers: { "content-type": "text/yaml" } }),
    status: 415,
    type: bad,
    code: "unsupported_media_type",
  },
];

describe("error envelope", () => {
  it.each(rows.map((row) => [row.name, row] as const))("%s", async (_name, row) => {
    const response = await row.send();
    expect(response.status).toBe(row.status);
    expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(response.headers["api-version"]).toBe("1.4");
    expect(Object.keys(response.json)).toEqual(["error"]);
    const error = response.json.error;
    expect(Object.keys(error)).toEqual(["type", "code", "message", ...("param" in error ? ["param"] : []), "request_id"]);
    expect({ type: error.type, code: error.code }).toEqual({ type: row.type, code: row.code });
    if (row.param !== undefined) expect(error.param).toBe(row.param);
    expect(error.message).toEqual(expect.any(String));
    expect(error.message.length).toBeGreaterThan(0);
    expect(error.request_id).toBe(response.headers["request-id"]);
    expect(error.request_id).toMatch(/^req_/);
    for (const [name, value] of Object.entries(row.headers ?? {})) expect(response.headers[name]).toBe(value);
  });

  it.each([
    ["search query", `query=${encodeURIComponent("status:'active' AND colour:'red'")}`],
    ["search page", `query=status%3A%27active%27&page=${otherPage}`],
    ["list filter", "metadata[a]=1&metadata[b]=2"],
  ])("search and list refusals name the position or the param: %s", async (label, query) => {
    const response = await (label === "list filter" ? list(query) : search(query));
    expect(response.status).toBe(400);
    if (label === "search query")
      expect(response.json.error.message).toBe("Invalid query at position 21: unknown field 'colour' (fields: status, name, metadata['key'] or created).");
    if (label === "search page") expect(response.json.error.message).toBe("Invalid page: pass the next_page of the previous answer to the same query.");
    if (label === "list filter") expect(response.json.error.message).toBe("Invalid metadata: at most 1 metadata key here (search takes up to 5), got 2.");
  });

  it.each([
    ["missing name", { status: "paused" }, "status=paused"],
    ["unknown parameter", { name: "n", colour: "red" }, "name=n&colour=red"],
    ["bad status", { name: "n", status: "gone" }, "name=n&status=gone"],
    ["too long", { name: "x".repeat(201) }, `name=${"x".repeat(201)}`],
    ["bad metadata", { name: "n", metadata: { a: { b: "c" } } }, "name=n&metadata[a][b]=c"],
  ])("gives the same error for the JSON and form versions: %s", async (_name, json, form) => {
    const viaJson = await post("/v1/resources", { json });
    const viaForm = await post("/v1/resources", { form });
    const withoutId = (text: string) => text.replace(/"request_id":"req_\w+"/, "");
    expect(viaJson.status).toBe(400);
    expect(withoutId(viaForm.text)).toBe(withoutId(viaJson.text));
  });

  it("performed nothing for any of the refused writes", async () => {
    const response = await stack.api.get("/v1/resources?limit=100", { key: keys.secret });
    expect(response.json.data.map((r: { name: string }) => r.name)).toEqual(["exists"]);
  });
});
