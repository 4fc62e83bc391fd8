// The dashboard's live parts in a real browser (the system's Chromium) against the real stack: what the API makes
// while a page is open appears on it without a reload, brought by the API's streams, and the request logs' default
// list holds the API's traffic, not the dashboard's own.
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BrowserErrors } from "./browser-errors";
import { findOrInstallChromium } from "./chromium";
import { type Stack, startStack, trustDevelopmentCertificate } from "./stack";

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = "1";

const browserFound = await findOrInstallChromium(process.env, join(tmpdir(), "rms-chromium-install.log"), (line) => console.log(`dashboard e2e: ${line}`));
if ("missing" in browserFound) console.log(`dashboard e2e: skipped: ${browserFound.missing}`);

/** Long enough for a busy shared machine: the test waits for what must come, it never times it. */
const GENEROUS_MS = 45_000;

describe.skipIf("missing" in browserFound)("the dashboard's live parts in Chromium", () => {
  let stack: Stack;
  let browser: Browser;
  let page: Page;
  const browserErrors = new BrowserErrors();
  /** The paths of the API calls the page made (`/v1/events/stream`, `/v1/events`, ...). */
  const calls: string[] = [];

  /** Marks the page's document: a reload makes a new one, without the mark. */
  const markDocument = () => page.evaluate(() => document.documentElement.setAttribute("data-e2e-mark", "1"));
  const sameDocument = () => page.evaluate(() => document.documentElement.getAttribute("data-e2e-mark") === "1");

  beforeAll(async () => {
    if ("missing" in browserFound) return;
    await trustDevelopmentCertificate();
    stack = await startStack();
    browser = await chromium.launch({ executablePath: browserFound.path, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    page = await context.newPage();
    browserErrors.watch(page);
    page.on("request", (request) => {
      const url = new URL(request.url());
      if (url.pathname.startsWith("/v1/")) calls.push(url.pathname);
    });
    await page.goto(stack.dashboardLink);
    await page.getByRole("heading", { name: "Overview" }).waitFor({ timeout: GENEROUS_MS });
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it("shows an event made through the API on the open events page, without a reload, from the events stream", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Events" }).click();
    await page.getByRole("heading", { name: "Events", exact: true }).waitFor({ timeout: GENEROUS_MS });
    await page.getByText("No events.").waitFor({ timeout: GENEROUS_MS });
    await markDocument();
    const made = await stack.api("POST", "/v1/resources", { name: "Made while the page was open" });
    expect(made.status).toBe(201);
    // Its resource.created event is listed with the resource's id in its Object column.
    const row = page
      .getByRole("table", { name: "Events" })
      .getByRole("row")
      .filter({ hasText: made.body.id as string });
    await row.waitFor({ timeout: GENEROUS_MS });
    expect(await row.textContent()).toContain("resource.created");
    expect(await sameDocument()).toBe(true);
    expect(calls).toContain("/v1/events/stream");
  });

  it("follows a resource's events on its page", async () => {
    const made = await stack.api("POST", "/v1/resources", { name: "Renamed while watched" });
    const id = made.body.id as string;
    await page.goto(`${stack.origin}/dashboard/resources/${id}`);
    const events = page.getByRole("table", { name: `Events of ${id}` });
    await events.getByText("resource.created").waitFor({ timeout: GENEROUS_MS });
    await markDocument();
    expect((await stack.api("POST", `/v1/resources/${id}`, { name: "Renamed" })).status).toBe(200);
    await events.getByText("resource.updated").waitFor({ timeout: GENEROUS_MS });
    expect(await sameDocument()).toBe(true);
  });

  it("tails the request logs from their stream: the API's requests appear, the dashboard's own are not listed", async () => {
    await page.goto(`${stack.origin}/dashboard/request-logs?live=1`);
    const table = page.getByRole("table", { name: "Request logs" });
    await table.waitFor({ timeout: GENEROUS_MS });
    await markDocument();
    const missing = await stack.api("GET", "/v1/resources/res_0000000000000000000000");
    expect(missing.status).toBe(404);
    await table.getByText("/v1/resources/res_0000000000000000000000").first().waitFor({ timeout: GENEROUS_MS });
    expect(await sameDocument()).toBe(true);
    expect(calls).toContain("/v1/request_logs/stream");
    // The page reads /v1/request_logs with a dashboard session's key: those requests are the dashboard's, and the
    // default list (the API's traffic) leaves them out.
    expect(calls).toContain("/v1/request_logs");
    expect(await table.getByText("/v1/request_logs", { exact: true }).count()).toBe(0);
  });

  it("polls a list slowly when its stream cannot open, and still shows what the API made", async () => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const blocked = await context.newPage();
    // A server (or a proxy) without the streams: every stream request fails before an answer.
    await blocked.route("**/v1/*/stream*", (route) => route.abort());
    try {
      await blocked.goto(stack.dashboardLink.replace("/dashboard/#", "/dashboard/events#"));
      await blocked.getByRole("table", { name: "Events" }).waitFor({ timeout: GENEROUS_MS });
      const made = await stack.api("POST", "/v1/resources", { name: "Made with the streams blocked" });
      await blocked
        .getByRole("table", { name: "Events" })
        .getByRole("row")
        .filter({ hasText: made.body.id as string })
        .waitFor({ timeout: GENEROUS_MS });
    } finally {
      await context.close();
    }
  });

  it("made no console error (the scope probes' refusals at sign-in aside: the browser logs every 4xx)", () => {
    expect(browserErrors.unexpected([400])).toEqual([]);
  });
});
