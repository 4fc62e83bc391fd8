import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../../testutil/harness.js";
import { openSse, type SseStream } from "../../testutil/sse.js";

// Request logs say where a request came from (`source`: a dashboard session's key is `dashboard`, every other key
// `api`; CONTRACT.md section 12), the list and the stream hide the dashboard's own unless asked (`source=dashboard`,
// `source=all`), and GET /v1/request_logs/stream streams them as they are recorded, resumable as the events' stream.

let stack: Stack;
let key: string;
let dashboardKey: string;
const opened: SseStream[] = [];
beforeAll(async () => {
  stack = await startStack();
  ({ key } = await withSecretKey(stack));
  const session = await stack.api.post("/v1/dashboard_sessions", { key, form: {} });
  expect(session.status).toBe(201);
  dashboardKey = decodeURIComponent(String(session.json.url).split("#key=")[1]!);
});
afterAll(async () => {
  for (const stream of opened) stream.close();
  await stack?.stop();
});

const open = async (path: string, options: { lastEventId?: string } = {}) => {
  const stream = await openSse(stack.gateway.httpsPort, stack.gateway.certificate, path, { key, ...options });
  opened.push(stream);
  return stream;
};
/** A request whose log the tests look for: its Request-Id. */
const requestOf = async (path: string, as: string) => (await stack.api.get(path, { key: as })).headers["request-id"]!;
const listed = async (query: string) => {
  const page = await stack.api.get(`/v1/request_logs${query}`, { key });
  expect(page.status).toBe(200);
  return (page.json.data as { id: string; source: string }[]).map((l) => [l.id, l.source] as const);
};

describe("source", () => {
  it("is dashboard for a dashboard session's key and api for any other; the list shows only the API's unless asked", async () => {
    const fromApi = await requestOf("/v1/resources?limit=1", key);
    const fromDashboard = await requestOf("/v1/resources?limit=2", dashboardKey);
    await eventually(async () => expect((await listed("?source=all&limit=100")).map(([id]) => id)).toEqual(expect.arrayContaining([fromApi, fromDashboard])));
    const byDefault = await listed("?limit=100");
    expect(byDefault).toContainEqual([fromApi, "api"]);
    expect(byDefault.map(([id]) => id)).not.toContain(fromDashboard);
    expect(byDefault.every(([, source]) => source === "api")).toBe(true);
    expect(await listed("?source=dashboard&limit=100")).toContainEqual([fromDashboard, "dashboard"]);
    expect((await listed("?source=dashboard&limit=100")).map(([id]) => id)).not.toContain(fromApi);
    const all = await listed("?source=all&limit=100");
    expect(all).toContainEqual([fromApi, "api"]);
    expect(all).toContainEqual([fromDashboard, "dashboard"]);
    // With another filter, and its retrieve.
    expect((await listed("?source=dashboard&path=/v1/resources")).map(([id]) => id)).toContain(fromDashboard);
    expect((await stack.api.get(`/v1/request_logs/${fromDashboard}`, { key })).json.source).toBe("dashboard");
    const bad = await stack.api.get("/v1/request_logs?source=everything", { key });
    expect([bad.status, bad.json.error.param]).toEqual([400, "source"]);
  });
});

describe("GET /v1/request_logs/stream", () => {
  it("streams the account's requests as they are recorded, the dashboard's only with source, filtered as the list", async () => {
    const api = await open("/v1/request_logs/stream");
    const all = await open("/v1/request_logs/stream?source=all");
    const notFound = await open("/v1/request_logs/stream?status=4xx");
    const fromApi = await requestOf("/v1/resources?limit=3", key);
    const fromDashboard = await requestOf("/v1/resources?limit=4", dashboardKey);
    const missing = await requestOf("/v1/resources/res_0000000000000000000000", key);
    await eventually(() => {
      expect(all.events.map((e) => e.id)).toEqual(expect.arrayContaining([fromApi, fromDashboard, missing]));
      expect(api.events.map((e) => e.id)).toEqual(expect.arrayContaining([fromApi, missing]));
      expect(notFound.events.map((e) => e.id)).toContain(missing);
    });
    expect(api.events.map((e) => e.id)).not.toContain(fromDashboard);
    expect(notFound.events.every((e) => e.data.status >= 400 && e.data.status < 500)).toBe(true);
    const one = all.events.find((e) => e.id === fromDashboard)!;
    expect(one.event).toBe("request_log");
    expect(one.data).toEqual((await stack.api.get(`/v1/request_logs/${fromDashboard}`, { key })).json);
    for (const stream of [api, all, notFound]) stream.close();
  });

  it("resumes with Last-Event-ID: the requests recorded while away come once, in order", async () => {
    const first = await open("/v1/request_logs/stream?path=/v1/resources");
    const seed = await requestOf("/v1/resources?limit=5", key);
    await eventually(() => expect(first.events.map((e) => e.id)).toContain(seed));
    const last = first.events.at(-1)!.id;
    first.close();
    const away = await Promise.all(Array.from({ length: 30 }, (_, i) => requestOf(`/v1/resources?limit=${(i % 9) + 1}`, key)));
    const resumed = await open("/v1/request_logs/stream?path=/v1/resources", { lastEventId: last });
    await eventually(() => expect(resumed.events.map((e) => e.id)).toEqual(expect.arrayContaining(away)));
    const received = resumed.events.map((e) => e.id);
    expect(new Set(received).size).toBe(received.length);
    expect(received.filter((id) => away.includes(id))).toHaveLength(30);
    const again = await open(`/v1/request_logs/stream?path=/v1/resources&starting_after=${last}`);
    await eventually(() => expect(again.events.length).toBeGreaterThanOrEqual(30));
    expect(again.events.map((e) => e.id).slice(0, 30)).toEqual(received.slice(0, 30));
    resumed.close();
    again.close();
  });

  it("refuses a cursor of another account and bad filters", async () => {
    const other = await withSecretKey(stack);
    const theirs = await requestOf("/v1/resources", other.key);
    await eventually(async () => expect((await stack.api.get(`/v1/request_logs/${theirs}`, { key: other.key })).status).toBe(200));
    const foreign = await open("/v1/request_logs/stream", { lastEventId: theirs });
    expect([foreign.status, foreign.error.code, foreign.error.param]).toEqual([400, "parameter_invalid", "Last-Event-ID"]);
    const bad = await open("/v1/request_logs/stream?status=9xx");
    expect([bad.status, bad.error.param]).toEqual([400, "status"]);
  });
});
