// The dashboard in a real browser (the system's Chromium, driven by playwright-core; never a downloaded browser)
// against the real stack that `npm start` runs, through the main flows of CONTRACT.md section 13, with axe on every
// page and keyboard-only passes. Each page's screenshot is written to artifacts/screenshots/ (git-ignored).
import { mkdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import AxeBuilder from "@axe-core/playwright";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BrowserErrors } from "./browser-errors";
import { findOrInstallChromium } from "./chromium";
import { type Stack, startStack, trustDevelopmentCertificate } from "./stack";

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = "1";

const SCREENSHOTS = new URL("../artifacts/screenshots/", import.meta.url).pathname;
const browserFound = await findOrInstallChromium(process.env, join(tmpdir(), "rms-chromium-install.log"), (line) => console.log(`dashboard e2e: ${line}`));
if ("missing" in browserFound) console.log(`dashboard e2e: skipped: ${browserFound.missing}`);

/** What the failing receiver answers: a 503 with a JSON body, which the event page shows formatted. */
const FAILING_BODY = '{"error":{"code":"maintenance","message":"Down for maintenance until 14:00"},"retry_in":300}';

/**
 * A webhook receiver on 127.0.0.1 (the stack allows private addresses in tests): answers 200 with a short body, or,
 * with `failing`, 503 with FAILING_BODY.
 */
function receiver(failing = false): Promise<{ server: Server; url: string; received: string[] }> {
  const received: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      received.push(body);
      if (failing) res.writeHead(503, { "Content-Type": "application/json" }).end(FAILING_BODY);
      else res.writeHead(200, { "Content-Type": "application/json" }).end('{"received":true}');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, received })),
  );
}

describe.skipIf("missing" in browserFound)("the dashboard in Chromium", () => {
  let stack: Stack;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let hook: Awaited<ReturnType<typeof receiver>>;
  let failing: Awaited<ReturnType<typeof receiver>>;
  let resourceId: string;
  let endpointId: string;
  /** An endpoint whose receiver answers 503 to everything (resource.created only). */
  let failingId: string;
  /** An endpoint that subscribes to job.failed only: resource events are not for it. */
  let unsubscribedId: string;
  /** What the browser reported as errors (a CSP violation among them), by page. */
  const browserErrors = new BrowserErrors();

  const shot = async (p: Page, name: string) => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    await p.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
  };
  const watch = (p: Page) => browserErrors.watch(p);
  const newPage = async () => {
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true });
    const p = await ctx.newPage();
    watch(p);
    return { ctx, p };
  };
  const url = (path: string) => `${stack.origin}/dashboard${path}`;
  /** The focused element's name (its label, aria-label or text), or "main" for the main region. */
  const focusedName = (p: Page) =>
    p.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      if (!el || el === document.body) return "";
      if (el.id === "main") return "main";
      const label = el.id ? document.querySelector(`label[for="${el.id}"]`)?.textContent : null;
      return `${label ?? el.getAttribute("aria-label") ?? el.textContent ?? ""}`.trim();
    });
  /** Presses Tab until the focused control's name matches (at most 80 times). */
  const tabTo = async (p: Page, accessibleName: RegExp) => {
    for (let i = 0; i < 80; i++) {
      await p.keyboard.press("Tab");
      if (accessibleName.test(await focusedName(p))) return;
    }
    throw new Error(`no focusable control named ${accessibleName} within 80 tabs`);
  };

  beforeAll(async () => {
    if ("missing" in browserFound) return;
    await trustDevelopmentCertificate();
    [stack, hook, failing] = await Promise.all([startStack(), receiver(), receiver(true)]);
    const endpoint = await stack.api("POST", "/v1/webhook_endpoints", { url: hook.url, enabled_events: ["*"] });
    expect(endpoint.status).toBe(201);
    endpointId = endpoint.body.id as string;
    failingId = (await stack.api("POST", "/v1/webhook_endpoints", { url: failing.url, enabled_events: ["resource.created"] })).body.id as string;
    unsubscribedId = (await stack.api("POST", "/v1/webhook_endpoints", { url: `${hook.url}?jobs-only`, enabled_events: ["job.failed"] })).body.id as string;
    const resource = await stack.api("POST", "/v1/resources", { name: "Made with curl", metadata: { team: "billing" } });
    expect(resource.status).toBe(201);
    resourceId = resource.body.id as string;
    browser = await chromium.launch({ executablePath: browserFound.path, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    ({ ctx: context, p: page } = await newPage());
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    hook?.server.close();
    failing?.server.close();
  });

  it("signs in by the link npm start printed: the key leaves the address bar for this tab's sessionStorage", async () => {
    await page.goto(stack.dashboardLink);
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    expect(page.url()).toBe(url("/"));
    expect(await page.evaluate(() => sessionStorage.getItem("rms.dashboard.key"))).toMatch(/^rk_test_/);
    expect(await page.evaluate(() => document.cookie)).toBe("");
    await page.getByText("operational").waitFor();
    await page.getByText("Test mode").waitFor();
  });

  it("finds the resource made with curl, its resource.created event and the webhook attempt, and resends it", async () => {
    const listCalls: string[] = [];
    page.on("request", (request) => {
      if (request.url().includes("/v1/resources")) listCalls.push(request.url());
    });
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Resources" }).click();
    await page.getByRole("heading", { name: "Resources", exact: true }).waitFor();
    await page.getByRole("link", { name: resourceId }).waitFor();
    // The list is one page by cursor: never a count of the account.
    expect(listCalls.every((u) => /limit=(\d+)/.test(u) && Number(/limit=(\d+)/.exec(u)![1]) <= 100)).toBe(true);

    // Search (behind the Filters button), then the filters in the URL.
    await page.getByRole("button", { name: "Filters" }).click();
    await page.getByLabel("Search query").fill("name~'Made'");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await page.waitForURL(/q=/);
    await page.getByRole("link", { name: resourceId }).waitFor();
    await page.goto(url("/resources?metaKey=team&metaValue=billing&status=active"));
    await page.getByRole("link", { name: resourceId }).click();

    await page.getByRole("heading", { name: "Made with curl" }).waitFor();
    const created = page.getByRole("row").filter({ hasText: "resource.created" });
    await created.waitFor();
    await created.getByRole("link").click();

    await page.getByRole("heading", { name: "resource.created" }).waitFor();
    const delivered = page.getByRole("region", { name: `Delivery to ${hook.url}` });
    await delivered.getByText("delivered").waitFor({ timeout: 30_000 });
    await page.getByRole("button", { name: `Resend to ${hook.url}` }).click();
    await delivered
      .getByRole("status")
      .filter({ hasText: /Attempt wa_\w+: succeeded/ })
      .waitFor();
    // The manual attempt shows up on its own (the page follows while visible), under the endpoint's attempts.
    await delivered.getByText(/^\d+ attempts?, newest first$/).click();
    await delivered.getByRole("cell", { name: "manual" }).first().waitFor({ timeout: 30_000 });
  });

  it("shows every API error with its message and request id", async () => {
    await page.goto(url("/resources?q=nonsense%20query"));
    const alert = page.getByRole("alert");
    await alert.waitFor();
    await expect.poll(() => alert.textContent()).toContain("search_query_invalid");
    expect(await alert.getByTestId("request-id").textContent()).toMatch(/^req_[0-9A-Za-z]+$/);
    await shot(page, "05-error");
  });

  it("webhook endpoints: creates one with its secret shown once, rotates it, disables and enables it, shows its attempts", async () => {
    await page.goto(url("/webhooks"));
    await page.getByRole("button", { name: "New endpoint" }).click();
    await page.getByLabel("URL (https)").fill(`${hook.url}?second`);
    await page.getByRole("button", { name: "Add endpoint" }).click();
    expect(await page.getByTestId("webhook-secret").textContent()).toMatch(/^whsec_/);
    await page.getByRole("button", { name: "Copy secret" }).waitFor();
    await page.getByRole("link", { name: endpointId }).click();
    await page.getByRole("heading", { name: hook.url }).waitFor();
    await page.getByLabel("The old secret keeps signing for").selectOption("3600");
    await page.getByRole("button", { name: "Rotate secret" }).click();
    expect(await page.getByTestId("webhook-secret").textContent()).toMatch(/^whsec_/);
    await page.getByRole("button", { name: "Disable" }).click();
    await page.getByRole("button", { name: "Enable" }).click();
    await page.getByRole("button", { name: "Disable" }).waitFor();
    await page
      .getByRole("region", { name: "Attempts" })
      .getByRole("cell", { name: /^succeeded/ })
      .first()
      .waitFor();
    // The bulk resend of failed deliveries (recover) is behind its button.
    await page.getByRole("button", { name: "Resend failed deliveries" }).click();
    await page.getByRole("button", { name: "Resend them" }).click();
    await page.getByText(/Scheduled \d+ recovery/).waitFor();
  });

  it("imports an uploaded CSV and watches the job finish; previews a bulk update before confirming it", async () => {
    await page.goto(url("/jobs"));
    await page.getByRole("button", { name: "Import" }).click();
    const csv = "name,status,metadata[source]\nImported one,active,csv\nImported two,paused,csv\nImported three,,csv\n";
    await page.getByLabel("File (.csv, .jsonl)").setInputFiles({ name: "resources.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
    await page.getByRole("button", { name: "Upload and import" }).click();
    await page.waitForURL(/\/dashboard\/jobs\/job_/);
    const importJob = await stack.api("GET", `/v1/jobs/${/jobs\/(job_[0-9A-Za-z]+)/.exec(page.url())![1]}`);
    // Through the files API: the job reads the uploaded file.
    expect((importJob.body.params as { file?: string }).file).toMatch(/^file_/);
    await expect.poll(() => page.getByTestId("job-progress").textContent(), { timeout: 30_000 }).toBe("3 of 3 processed (100%)");
    await page.getByText("succeeded").first().waitFor();

    await page.goto(url("/jobs"));
    await page.getByRole("button", { name: "Bulk update or delete" }).click();
    await page.getByLabel("Where status is").selectOption("paused");
    await page.getByLabel("Set status to").selectOption("archived");
    await page.getByRole("button", { name: "Preview" }).click();
    await page.getByText(/1\s+resource matches now/).waitFor();
    await page.getByRole("button", { name: "Confirm: update 1" }).click();
    await page.waitForURL(/\/dashboard\/jobs\/job_/);
    await expect.poll(() => page.getByTestId("job-progress").textContent(), { timeout: 30_000 }).toBe("1 of 1 processed (100%)");
  });

  it("lists the uploaded and the job's files, exports every resource and downloads the file", async () => {
    await page.goto(url("/files"));
    await page.getByRole("cell", { name: "resources.csv", exact: true }).waitFor();
    await page.getByRole("cell", { name: "job_results" }).first().waitFor();
    // What the account stores of its quota (GET /v1/files: used_bytes, quota_bytes).
    expect(await page.getByTestId("storage-use").textContent()).toMatch(/^[\d.]+ (B|KB|MB) of 10\.0 GB used \(0%\)$/);

    await page.goto(url("/jobs"));
    await page.getByRole("button", { name: "Export" }).click();
    await page.getByLabel("Format").selectOption("csv");
    await page.getByRole("button", { name: "Start export" }).click();
    await page.waitForURL(/\/dashboard\/jobs\/job_/);
    await page.getByRole("region", { name: "Progress" }).getByText("succeeded").waitFor({ timeout: 30_000 });
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("region", { name: "Files" }).getByRole("button", { name: "Download the export (CSV)" }).click(),
    ]);
    const text = await download.createReadStream().then(async (stream) => {
      let out = "";
      for await (const chunk of stream) out += chunk;
      return out;
    });
    expect(text).toMatch(/^\uFEFF?id,name,status,created,metadata\r?\n/);
    expect(text).toContain("Made with curl");
    // Saved under the name the API gives it: named after its job and what it holds.
    expect(download.suggestedFilename()).toMatch(/^resources_export_job_[0-9A-Za-z]+\.csv$/);
  });

  it("reads the request log of a failed call: its parameters, its answer, links to the objects", async () => {
    const failed = await stack.api("POST", "/v1/resources", { name: "" });
    expect(failed.status).toBe(400);
    const requestId = (failed.body.error as { request_id: string }).request_id;
    await page.goto(url("/request-logs?status=4xx"));
    // Recorded within about a second of the answer.
    await expect
      .poll(
        async () => {
          await page.reload();
          await page.locator("table, .notice").first().waitFor();
          return page.getByRole("link", { name: requestId }).count();
        },
        { timeout: 30_000, interval: 1_000 },
      )
      .toBe(1);
    await page.getByRole("link", { name: requestId }).click();
    await page.getByRole("heading", { name: "POST /v1/resources" }).waitFor();
    await page.getByText("parameter_invalid_empty").first().waitFor();
    expect(await page.getByRole("region", { name: "The request's parameters" }).textContent()).toContain('"name": ""');
  });

  it("request logs leave out the dashboard's own requests unless asked, with statuses and methods as choices", async () => {
    const made = await stack.api("GET", "/v1/resources?limit=2");
    expect(made.status).toBe(200);
    await page.goto(url("/request-logs"));
    const table = page.getByRole("table", { name: "Request logs" });
    const sources = () => table.locator('td[data-label="Source"]').allTextContents();
    const shown = () => table.locator('td[data-label="Request"] a').allTextContents();
    // The dashboard itself asked dozens of times by now (its polls, its scope probes): none of them is listed.
    await expect.poll(async () => (await shown()).length, { timeout: 15_000 }).toBeGreaterThan(0);
    for (const id of await shown()) expect(((await stack.api("GET", `/v1/request_logs/${id}`)).body as { source: string }).source, id).toBe("api");
    expect(await sources()).toEqual([]);
    await page.getByRole("button", { name: "Filters" }).click();
    await page.getByLabel("Requests made by").selectOption("all");
    await page.getByLabel("Method").selectOption("GET");
    await page.getByRole("button", { name: "Apply" }).click();
    await page.waitForURL(/source=all/);
    // Plain text in the address bar (never quoted JSON).
    expect(page.url()).toMatch(/[?&]method=GET(&|$)/);
    await expect.poll(async () => (await sources()).includes("dashboard")).toBe(true);
    expect(new Set(await table.locator('td[data-label="Method"]').allTextContents())).toEqual(new Set(["GET"]));
  });

  it("shows the failing endpoint failing on the overview, with its rate, last error and chart", async () => {
    // The failing receiver answered 503 to every attempt of "Made with curl"'s event (and of later ones).
    await expect
      .poll(async () => (await stack.api("GET", `/v1/webhook_endpoints/${failingId}/delivery_stats`)).body.failure_streak, { timeout: 30_000 })
      .toBeGreaterThan(0);
    await page.goto(url("/"));
    const row = page.getByRole("row").filter({ hasText: failing.url });
    await row.getByText("failing").waitFor();
    // Failing first: the first row of the table is this endpoint's.
    expect(
      await page
        .getByRole("table", { name: /Webhook endpoints by delivery health/ })
        .getByRole("row")
        .nth(1)
        .textContent(),
    ).toContain(failing.url);
    expect(await row.getByText("0%").count()).toBeGreaterThan(0);
    expect(await row.textContent()).toMatch(/failed in a row/);
    expect(await row.getByRole("img", { name: /Deliveries per hour, last 24 hours: 0 succeeded, \d+ failed/ }).count()).toBe(1);
    // The healthy one says so.
    await page
      .getByRole("row")
      .filter({ hasText: `${hook.url}` })
      .first()
      .getByText("healthy")
      .waitFor();
  });

  it(
    "the event page shows the failing delivery first, with its status and body " + "formatted, and offers no resend where the endpoint does not subscribe",
    async () => {
      const event = await stack.api("GET", `/v1/events?object=${resourceId}&limit=1`);
      const eventId = (event.body.data as { id: string }[])[0]!.id;
      await page.goto(url(`/events/${eventId}`));
      await page.getByRole("heading", { name: "resource.created" }).waitFor();
      const first = page.locator("section.delivery").first();
      await expect.poll(() => first.getAttribute("aria-label"), { timeout: 30_000 }).toBe(`Delivery to ${failing.url}`);
      await first.getByText(/Latest attempt failed/).waitFor();
      await first.locator(".status-code", { hasText: "503" }).first().waitFor();
      // The body, open and formatted: its keys and values as a tree, not one line of text with \n in it.
      const body = first.getByRole("region", { name: /^Response body of wa_/ });
      await body.getByText('"Down for maintenance until 14:00"').waitFor();
      await body.getByText('"retry_in": ').waitFor();
      // The next retry, or "gave up" once the schedule is done (1 s, 2 s, 3 s in this stack).
      await first
        .getByText(/next retry|gave up/)
        .first()
        .waitFor();
      // The endpoint that subscribes to job.failed only: no Resend, and why.
      const unsubscribed = page.getByRole("region", { name: `Delivery to ${hook.url}?jobs-only` });
      await unsubscribed.getByText("Resend is not offered").waitFor();
      expect(await unsubscribed.getByRole("button", { name: /Resend/ }).count()).toBe(0);
      // The API refuses it too, with the reason.
      const refused = await stack.api("POST", `/v1/events/${eventId}/resend`, { webhook_endpoint: unsubscribedId });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ code: "parameter_invalid", param: "webhook_endpoint" });
      expect((refused.body.error as { message: string }).message).toContain("not subscribed to resource.created");
    },
  );

  it("pages an endpoint's attempts newest first (as the API lists them), by cursor", async () => {
    // Enough attempts for two pages: each resend to the failing endpoint is one.
    const event = await stack.api("GET", `/v1/events?object=${resourceId}&limit=1`);
    const eventId = (event.body.data as { id: string }[])[0]!.id;
    for (let i = 0; i < 20; i++) expect((await stack.api("POST", `/v1/events/${eventId}/resend`, { webhook_endpoint: failingId })).status).toBe(200);
    await page.goto(url(`/webhooks/${failingId}`));
    const attempts = page.getByRole("region", { name: "Attempts" });
    const times = async () => attempts.locator("tbody time").evaluateAll((nodes) => nodes.map((n) => Date.parse(n.getAttribute("datetime") ?? "")));
    await expect.poll(async () => (await times()).length).toBe(20);
    const firstPage = await times();
    await attempts.getByRole("button", { name: "Older" }).click();
    await page.waitForURL(/after=wa_/);
    await expect.poll(async () => (await times())[0]).toBeLessThanOrEqual(firstPage.at(-1)!);
    const secondPage = await times();
    const all = [...firstPage, ...secondPage];
    // Newest first across both pages, as the API lists them: by the time each attempt was due (its id; docs/webhooks.md,
    // "Attempts"). Its `created`, the time shown, is when it was made, later than that when the endpoint's lane was behind.
    const listed = await stack.api("GET", `/v1/webhook_endpoints/${failingId}/attempts?limit=100`);
    const apiOrder = listed.body.data as { id: string; created: number }[];
    expect(apiOrder.map((a) => a.id)).toEqual(
      apiOrder
        .map((a) => a.id)
        .sort()
        .reverse(),
    );
    // The pages show a run of that list (a retry may have been added at its head since they were read).
    const apiTimes = apiOrder.map((a) => a.created * 1000);
    const at = apiTimes.findIndex((_, k) => apiTimes.slice(k, k + all.length).every((time, i) => time === all[i]));
    expect(at, `the pages' times ${all.join(",")} within the API's ${apiTimes.join(",")}`).toBeGreaterThanOrEqual(0);
    await attempts.getByRole("button", { name: "Newer" }).click();
    await expect.poll(times).toEqual(firstPage);
    // The outcome filter: the succeeded ones only (none for this endpoint).
    await page.goto(url(`/webhooks/${failingId}?status=succeeded`));
    await attempts.getByText("No attempt matches.").waitFor();
  });

  it("opens any object's page from its id in the top bar", async () => {
    const event = await stack.api("GET", `/v1/events?object=${resourceId}&limit=1`);
    const eventId = (event.body.data as { id: string }[])[0]!.id;
    await page.goto(url("/"));
    const box = page.getByLabel("Go to an id");
    await box.fill(` ${eventId} `);
    await box.press("Enter");
    await page.waitForURL(url(`/events/${eventId}`));
    await page.getByRole("heading", { name: "resource.created" }).waitFor();
    expect(await page.title()).toBe(`${eventId} · resource.created · rms dashboard`);
    await box.fill(failingId);
    await page.getByRole("button", { name: "Go", exact: true }).click();
    await page.waitForURL(url(`/webhooks/${failingId}`));
    await box.fill(resourceId);
    await box.press("Enter");
    await page.getByRole("heading", { name: "Made with curl" }).waitFor();
    await box.fill("nope_123");
    await box.press("Enter");
    await page.getByRole("alert").filter({ hasText: "No page shows nope_ ids" }).waitFor();
  });

  it("the keys page lists the account's keys and sessions; a secret key revokes one, which then answers 401; a session sees no buttons", async () => {
    const printed = await stack.rms([
      "keys",
      "create",
      "--account",
      stack.accountId,
      "--kind",
      "restricted",
      "--mode",
      "test",
      "--scopes",
      "resources:read",
      "--json",
    ]);
    const made = JSON.parse(printed.split("\n")[0]!) as { id: string; secret: string };
    expect((await stack.api("GET", "/v1/resources?limit=1", undefined, made.secret)).status).toBe(200);
    // Signed in with the secret key itself (pasted): revoking needs one.
    const { ctx, p } = await newPage();
    await p.goto(url("/keys"));
    await p.getByLabel("API key").fill(stack.secretKey);
    await p.getByRole("button", { name: "Sign in" }).click();
    await p.getByRole("heading", { name: "API keys and sessions" }).waitFor();
    expect(await p.title()).toBe("API keys · rms dashboard");
    const row = p.getByRole("row").filter({ hasText: made.id });
    await row.getByText("resources:read").waitFor();
    // The sign-in links' keys are there too, marked.
    await p.getByRole("row").filter({ hasText: "dashboard session" }).first().waitFor();
    await row.getByRole("button", { name: `Revoke ${made.id}` }).click();
    await row.getByRole("button", { name: "Yes, revoke it" }).click();
    await row.getByText("revoked").waitFor();
    const after = await stack.api("GET", "/v1/resources?limit=1", undefined, made.secret);
    expect(after.status).toBe(401);
    expect((after.body.error as { code: string }).code).toBe("api_key_revoked");
    await ctx.close();
    // A dashboard session (this tab's) reads the list, without the buttons, and says why.
    await page.goto(url("/keys"));
    await page.getByRole("row").filter({ hasText: made.id }).getByText("revoked").waitFor();
    expect(await page.getByRole("button", { name: /^Revoke/ }).count()).toBe(0);
    await page.getByText("Revoking a key needs a secret key").waitFor();
  });

  it("has no serious or critical accessibility violation on any page, in both themes, at both sizes (axe), and screenshots each", async () => {
    const jobs = await stack.api("GET", "/v1/jobs?limit=100");
    const importJob = (jobs.body.data as { id: string; type: string }[]).find((j) => j.type === "resources.import")!.id;
    const files = await stack.api("GET", "/v1/files?limit=1");
    const fileId = (files.body.data as { id: string }[])[0]!.id;
    const event = await stack.api("GET", `/v1/events?object=${resourceId}&limit=1`);
    const eventId = (event.body.data as { id: string }[])[0]!.id;
    const logs = await stack.api("GET", "/v1/request_logs?limit=1&status=4xx");
    const logId = (logs.body.data as { id: string }[])[0]!.id;
    const pages: [string, string][] = [
      ["overview", "/"],
      ["resources", "/resources"],
      ["resource", `/resources/${resourceId}`],
      ["events", "/events"],
      ["event", `/events/${eventId}`],
      ["webhooks", "/webhooks"],
      ["webhook", `/webhooks/${failingId}`],
      ["jobs", "/jobs"],
      ["job", `/jobs/${importJob}`],
      ["files", "/files"],
      ["file", `/files/${fileId}`],
      ["request-logs", "/request-logs"],
      ["request-log", `/request-logs/${logId}`],
      ["keys", "/keys"],
      ["not-found", "/no-such-page"],
    ];
    const problems: string[] = [];
    const check = async (p: Page, name: string) => {
      // Legacy mode runs axe in the page itself (the default opens one more page per check to finish there), and rows
      // past the sixth of a table repeat the same markup: leaving them out keeps a check to seconds on two busy cores.
      const results = await new AxeBuilder({ page: p }).setLegacyMode(true).exclude("tbody > tr:nth-child(n+7)").analyze();
      for (const v of results.violations.filter((v) => v.impact === "serious" || v.impact === "critical")) {
        problems.push(`${name}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
      }
    };
    // The four (theme, size) pairs one after another, each in its own context (at once they took as long on two busy
    // cores, and starved the stack's own processes).
    const pairs = (["light", "dark"] as const).flatMap((colorScheme) =>
      (
        [
          ["1280x800", { width: 1280, height: 800 }],
          ["390x844", { width: 390, height: 844 }],
        ] as const
      ).map(([size, viewport]) => ({ colorScheme, size, viewport })),
    );
    for (const { colorScheme, size, viewport } of pairs) {
      const ctx = await browser.newContext({ ignoreHTTPSErrors: true, colorScheme, viewport });
      const p = await ctx.newPage();
      watch(p);
      await p.goto(url("/"));
      await p.getByRole("heading", { name: "Sign in to the rms dashboard" }).waitFor();
      await check(p, `${colorScheme} ${size} sign-in`);
      await shot(p, `${colorScheme}-${size}-00-sign-in`);
      // The link pasted into this open tab signs it in.
      await p.goto(stack.dashboardLink);
      await p.getByRole("heading", { name: "Overview" }).waitFor();
      for (const [i, [name, path]] of pages.entries()) {
        await p.goto(url(path));
        await p.locator("main h1").first().waitFor();
        // Still signed in: a page that fell back to sign-in would pass axe and prove nothing.
        expect(await p.locator("main h1").first().textContent(), `${colorScheme} ${size} ${name}`).not.toBe("Sign in to the rms dashboard");
        // Every query answered (the live ones keep asking, so the network is never idle).
        await p.waitForFunction(() => document.querySelector(".loading") === null && !document.querySelector("main")?.textContent?.includes("…"), undefined, {
          timeout: 30_000,
        });
        await check(p, `${colorScheme} ${size} ${name}`);
        await shot(p, `${colorScheme}-${size}-${String(i + 1).padStart(2, "0")}-${name}`);
      }
      await ctx.close();
    }
    expect(problems).toEqual([]);
  }, 600_000);

  it("creates a resource and resends an event with the keyboard alone", async () => {
    await page.goto(url("/resources"));
    await page.getByRole("heading", { name: "Resources", exact: true }).waitFor();
    await tabTo(page, /^New resource$/);
    await page.keyboard.press("Enter");
    await tabTo(page, /^Name$/);
    await page.keyboard.type("Typed at the keyboard");
    await tabTo(page, /^Create resource$/);
    await page.keyboard.press("Enter");
    await page.getByRole("status").filter({ hasText: "Typed at the keyboard" }).waitFor();
    const created = await stack.api("GET", "/v1/resources/search?query=name~'Typed'");
    expect((created.body.data as { name: string }[]).map((r) => r.name)).toEqual(["Typed at the keyboard"]);

    const event = await stack.api("GET", `/v1/events?object=${resourceId}&limit=1`);
    const eventId = (event.body.data as { id: string }[])[0]!.id;
    await page.goto(url(`/events/${eventId}`));
    await page.getByRole("heading", { name: "resource.created" }).waitFor();
    await tabTo(page, new RegExp(`^Resend to ${hook.url.replace(/[.?]/g, "\\$&")}$`));
    await page.keyboard.press("Enter");
    await page
      .getByRole("status")
      .filter({ hasText: /Attempt wa_\w+: succeeded/ })
      .waitFor();
  });

  it("keeps the keyboard's place: filters, opens a resource, saves it, asks to delete it, takes that back, deletes it", async () => {
    const made = await stack.api("POST", "/v1/resources", { name: "Reached by keyboard", metadata: { reach: "keys" } });
    const id = made.body.id as string;
    await page.goto(url("/resources"));
    await page.getByRole("heading", { name: "Resources", exact: true }).waitFor();
    await tabTo(page, /^Filters$/);
    await page.keyboard.press("Enter");
    await tabTo(page, /^Metadata key$/);
    await page.keyboard.type("reach");
    await page.keyboard.press("Tab");
    await page.keyboard.type("keys");
    await page.keyboard.press("Enter");
    await page.waitForURL(/metaValue=keys/);
    await page.getByRole("link", { name: id }).waitFor();
    await tabTo(page, new RegExp(`^${id}$`));
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Reached by keyboard" }).waitFor();
    // The link went away with the list: the focus is on the new page's main region, not back at the page's top.
    await expect.poll(() => focusedName(page)).toBe("main");

    // Saving keeps the focus on its button (a button disabled while its call runs would drop it to the top).
    await tabTo(page, /^Edit$/);
    await page.keyboard.press("Enter");
    await tabTo(page, /^Name$/);
    await page.keyboard.press("End");
    await page.keyboard.type(", edited");
    await tabTo(page, /^Save changes$/);
    const saved = page.waitForResponse((r) => r.url().endsWith(`/v1/resources/${id}`) && r.request().method() === "POST");
    await page.keyboard.press("Enter");
    expect((await saved).status()).toBe(200);
    await page.getByRole("heading", { name: "Reached by keyboard, edited" }).waitFor();
    expect(await focusedName(page)).toBe("Save changes");

    // The delete's question takes the focus to Cancel; Escape takes the question back and the focus to Delete.
    await page.keyboard.press("Tab");
    expect(await focusedName(page)).toBe("Delete resource");
    await page.keyboard.press("Enter");
    expect(await focusedName(page)).toBe("Cancel");
    await page.keyboard.press("Escape");
    expect(await focusedName(page)).toBe("Delete resource");
    expect((await stack.api("GET", `/v1/resources/${id}`)).status).toBe(200);
    await page.keyboard.press("Enter");
    await page.keyboard.press("Shift+Tab");
    expect(await focusedName(page)).toBe("Yes, delete it");
    await page.keyboard.press("Enter");
    await page.waitForURL(url("/resources"));
    await expect.poll(() => focusedName(page)).toBe("main");
    expect((await stack.api("GET", `/v1/resources/${id}`)).status).toBe(404);
  });

  it("edits a resource's name, status and metadata, and deletes it only after a confirmation", async () => {
    const made = await stack.api("POST", "/v1/resources", { name: "To edit", metadata: { a: "1", b: "2" } });
    const id = made.body.id as string;
    await page.goto(url(`/resources/${id}`));
    await page.getByRole("heading", { name: "To edit" }).waitFor();
    await page.getByRole("button", { name: "Edit" }).click();
    await page.getByLabel("Name", { exact: true }).fill("Edited");
    await page.getByLabel("Status", { exact: true }).selectOption("paused");
    await page.getByLabel(/^Metadata/).fill("a=1\nc=3");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByRole("heading", { name: "Edited" }).waitFor();
    const edited = await stack.api("GET", `/v1/resources/${id}`);
    expect(edited.body).toMatchObject({ name: "Edited", status: "paused", metadata: { a: "1", c: "3" } });
    expect(Object.keys(edited.body.metadata as object)).not.toContain("b");
    await page.getByRole("row").filter({ hasText: "resource.updated" }).waitFor();

    await page.getByRole("button", { name: "Delete resource" }).click();
    expect((await stack.api("GET", `/v1/resources/${id}`)).status).toBe(200);
    await page.getByRole("button", { name: "Yes, delete it" }).click();
    await page.waitForURL(url("/resources"));
    expect((await stack.api("GET", `/v1/resources/${id}`)).status).toBe(404);
  });

  it("a read-only session offers no change and says why; a revoked key returns the tab to sign-in with the API's message", async () => {
    const session = await stack.api("POST", "/v1/dashboard_sessions", { read_only: true, expires_in: 600 });
    expect(session.status).toBe(201);
    const { ctx, p } = await newPage();
    await p.goto(session.body.url as string);
    await p.getByText("read-only").first().waitFor();
    await p.goto(url("/resources"));
    await p.getByRole("heading", { name: "Resources", exact: true }).waitFor();
    await p.getByRole("button", { name: "New resource" }).click();
    expect(await p.getByRole("button", { name: "Create resource" }).isDisabled()).toBe(true);
    await p.getByText("This key does not have the resources:write scope").first().waitFor();
    await p.goto(url(`/resources/${resourceId}`));
    await p.getByRole("heading", { name: "Made with curl" }).waitFor();
    await p.getByRole("button", { name: "Edit" }).click();
    expect(await p.getByRole("button", { name: "Save changes" }).isDisabled()).toBe(true);
    expect(await p.getByRole("button", { name: "Delete resource" }).isDisabled()).toBe(true);
    await shot(p, "12-read-only");

    await stack.rms(["keys", "revoke", session.body.api_key as string]);
    await p.goto(url("/events"));
    await p.getByRole("heading", { name: "Sign in to the rms dashboard" }).waitFor();
    await p.getByText("This API key has been revoked.").waitFor();
    expect(await p.evaluate(() => sessionStorage.getItem("rms.dashboard.key"))).toBeNull();
    await shot(p, "13-revoked");
    await ctx.close();
  });

  it("rms dashboard prints a link that signs in; a pasted key signs in; sign-out forgets the key", async () => {
    const printed = await stack.rms(["dashboard", "--account", stack.accountId, "--mode", "test", "--origin", stack.origin]);
    const link = /https:\/\/\S+#key=rk_test_\S+/.exec(printed)?.[0];
    expect(link).toBeDefined();
    const { ctx, p } = await newPage();
    await p.goto(link!);
    await p.getByRole("heading", { name: "Overview" }).waitFor();
    await p.getByRole("button", { name: "Sign out" }).click();
    await p.getByRole("heading", { name: "Sign in to the rms dashboard" }).waitFor();
    expect(await p.evaluate(() => sessionStorage.length)).toBe(0);
    await p.getByLabel("API key").fill(stack.secretKey);
    await p.getByRole("button", { name: "Sign in" }).click();
    await p.getByRole("heading", { name: "Overview" }).waitFor();
    await ctx.close();
  });

  it("loaded nothing the CSP refused and threw nothing", () => {
    // 4xx answers the tests asked for on purpose are logged by Chromium as failed loads; everything else is a bug.
    expect(browserErrors.unexpected([400, 401, 403, 404])).toEqual([]);
    void context;
  });
});
