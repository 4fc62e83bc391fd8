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
import { findOrInstallChromium } from "./chromium";
import { type Stack, startStack, trustDevelopmentCertificate } from "./stack";

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = "1";

const SCREENSHOTS = new URL("../artifacts/screenshots/", import.meta.url).pathname;
const browserFound = await findOrInstallChromium(process.env, join(tmpdir(), "rms-chromium-install.log"), (line) => console.log(`dashboard e2e: ${line}`));
if ("missing" in browserFound) console.log(`dashboard e2e: skipped: ${browserFound.missing}`);

/** A webhook receiver on 127.0.0.1 (the stack allows private addresses in tests): answers 200 with a short body. */
function receiver(): Promise<{ server: Server; url: string; received: string[] }> {
  const received: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      received.push(body);
      res.writeHead(200, { "Content-Type": "application/json" }).end('{"received":true}');
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, received })));
}

describe.skipIf("missing" in browserFound)("the dashboard in Chromium", () => {
  let stack: Stack;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let hook: Awaited<ReturnType<typeof receiver>>;
  let resourceId: string;
  let endpointId: string;
  /** What the browser reported as errors (a CSP violation among them), by page. */
  const consoleErrors: string[] = [];

  const shot = async (p: Page, name: string) => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    await p.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
  };
  const watch = (p: Page) => {
    p.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(`${p.url()}: ${message.text()}`);
    });
    p.on("pageerror", (error) => consoleErrors.push(`${p.url()}: ${error.message}`));
  };
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
    [stack, hook] = await Promise.all([startStack(), receiver()]);
    const endpoint = await stack.api("POST", "/v1/webhook_endpoints", { url: hook.url, enabled_events: ["*"] });
    expect(endpoint.status).toBe(201);
    endpointId = endpoint.body.id as string;
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
  });

  it("signs in by the link npm start printed: the key leaves the address bar for this tab's sessionStorage", async () => {
    await page.goto(stack.dashboardLink);
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    expect(page.url()).toBe(url("/"));
    expect(await page.evaluate(() => sessionStorage.getItem("rms.dashboard.key"))).toMatch(/^rk_test_/);
    expect(await page.evaluate(() => document.cookie)).toBe("");
    await page.getByText("operational").waitFor();
    await page.getByText("Test mode").waitFor();
    await shot(page, "01-overview");
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
    await shot(page, "02-resources");

    // Search, then the filters in the URL.
    await page.getByLabel("Search query").fill("name~'Made'");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await page.waitForURL(/q=/);
    await page.getByRole("link", { name: resourceId }).waitFor();
    await page.goto(url("/resources?metaKey=team&metaValue=billing&status=active"));
    await page.getByRole("link", { name: resourceId }).click();

    await page.getByRole("heading", { name: "Made with curl" }).waitFor();
    const created = page.getByRole("row").filter({ hasText: "resource.created" });
    await created.waitFor();
    await shot(page, "03-resource");
    await created.getByRole("link").click();

    await page.getByRole("heading", { name: "resource.created" }).waitFor();
    await page
      .getByRole("region", { name: `Delivery to ${hook.url}` })
      .getByText("succeeded")
      .first()
      .waitFor({ timeout: 30_000 });
    await page.getByRole("button", { name: `Resend to ${hook.url}` }).click();
    await page.getByText("Scheduled attempt").waitFor();
    // The manual attempt shows up on its own (the page polls while visible).
    await page.getByRole("cell", { name: "manual" }).first().waitFor({ timeout: 30_000 });
    await shot(page, "04-event");
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
    await page.getByLabel("URL (https)").fill(`${hook.url}?second`);
    await page.getByRole("button", { name: "Add endpoint" }).click();
    expect(await page.getByTestId("webhook-secret").textContent()).toMatch(/^whsec_/);
    await page.getByRole("button", { name: "Copy secret" }).waitFor();
    await shot(page, "06-webhooks");
    await page.getByRole("link", { name: endpointId }).click();
    await page.getByRole("heading", { name: hook.url }).waitFor();
    await page.getByLabel("The old secret keeps signing for").selectOption("3600");
    await page.getByRole("button", { name: "Rotate secret" }).click();
    expect(await page.getByTestId("webhook-secret").textContent()).toMatch(/^whsec_/);
    await page.getByRole("button", { name: "Disable" }).click();
    await page.getByRole("button", { name: "Enable" }).click();
    await page.getByRole("button", { name: "Disable" }).waitFor();
    await page
      .getByRole("region", { name: "Attempts (live)" })
      .getByRole("cell", { name: /^succeeded/ })
      .first()
      .waitFor();
    await page.getByRole("button", { name: "Recover" }).click();
    await page.getByText(/Scheduled \d+ recovery/).waitFor();
    await shot(page, "07-webhook");
  });

  it("imports an uploaded CSV and watches the job finish; previews a bulk update before confirming it", async () => {
    await page.goto(url("/jobs"));
    const csv = "name,status,metadata[source]\nImported one,active,csv\nImported two,paused,csv\nImported three,,csv\n";
    await page.getByLabel("File (.csv, .jsonl)").setInputFiles({ name: "resources.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
    await page.getByRole("button", { name: "Upload and import" }).click();
    await page.waitForURL(/\/dashboard\/jobs\/job_/);
    const importJob = await stack.api("GET", `/v1/jobs/${/jobs\/(job_[0-9A-Za-z]+)/.exec(page.url())![1]}`);
    // Through the files API: the job reads the uploaded file.
    expect((importJob.body.params as { file?: string }).file).toMatch(/^file_/);
    await expect.poll(() => page.getByTestId("job-progress").textContent(), { timeout: 30_000 }).toBe("3 of 3 processed (100%)");
    await page.getByText("succeeded").first().waitFor();
    await shot(page, "08-job");

    await page.goto(url("/jobs"));
    await page.getByLabel("Where status is").selectOption("paused");
    await page.getByLabel("Set status to").selectOption("archived");
    await page.getByRole("button", { name: "Preview" }).click();
    await page.getByText(/1\s+resource matches now/).waitFor();
    await shot(page, "09-jobs");
    await page.getByRole("button", { name: "Confirm: update 1" }).click();
    await page.waitForURL(/\/dashboard\/jobs\/job_/);
    await expect.poll(() => page.getByTestId("job-progress").textContent(), { timeout: 30_000 }).toBe("1 of 1 processed (100%)");
  });

  it("lists the uploaded and the job's files, exports every resource and downloads the file", async () => {
    await page.goto(url("/files"));
    await page.getByRole("cell", { name: "resources.csv" }).waitFor();
    await page.getByRole("cell", { name: "job_results" }).first().waitFor();
    // What the account stores of its quota (GET /v1/files: used_bytes, quota_bytes).
    expect(await page.getByTestId("storage-use").textContent()).toMatch(/^[\d.]+ (B|KB|MB) of 10\.0 GB used \(0%\)$/);
    await shot(page, "10-files");

    await page.goto(url("/jobs"));
    await page.getByLabel("Format").selectOption("csv");
    await page.getByRole("button", { name: "Start export" }).click();
    await page.waitForURL(/\/dashboard\/jobs\/job_/);
    await page.getByRole("region", { name: "Progress" }).getByText("succeeded").waitFor({ timeout: 30_000 });
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("region", { name: "Files" }).getByRole("button", { name: "Download" }).first().click()]);
    const text = await download.createReadStream().then(async (stream) => {
      let out = "";
      for await (const chunk of stream) out += chunk;
      return out;
    });
    expect(text).toMatch(/^\uFEFF?id,name,status,created,metadata\r?\n/);
    expect(text).toContain("Made with curl");
    await shot(page, "10b-export");
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
    await shot(page, "11-request-logs");
    await page.getByRole("link", { name: requestId }).click();
    await page.getByRole("heading", { name: "POST /v1/resources" }).waitFor();
    await page.getByText("parameter_invalid_empty").first().waitFor();
    expect(await page.getByRole("region", { name: "The request's parameters" }).textContent()).toContain('"name": ""');
    await shot(page, "11b-request-log");
  });

  it("has no serious or critical accessibility violation on any page (axe)", async () => {
    const jobId = await page.evaluate(async () => {
      const key = sessionStorage.getItem("rms.dashboard.key");
      const response = await fetch("/v1/jobs?limit=1", { headers: { Authorization: `Bearer ${key}` } });
      return ((await response.json()) as { data: { id: string }[] }).data[0]!.id;
    });
    const event = await stack.api("GET", `/v1/events?object=${resourceId}&limit=1`);
    const eventId = (event.body.data as { id: string }[])[0]!.id;
    const paths = [
      "/",
      "/resources",
      `/resources/${resourceId}`,
      "/events",
      `/events/${eventId}`,
      "/webhooks",
      `/webhooks/${endpointId}`,
      "/jobs",
      `/jobs/${jobId}`,
      "/files",
      "/request-logs",
      "/no-such-page",
    ];
    const problems: string[] = [];
    for (const path of paths) {
      await page.goto(url(path));
      await page.locator("main h1").first().waitFor();
      // Every query answered (the live ones keep polling, so the network is never idle).
      await page.waitForFunction(() => document.querySelector(".loading") === null, undefined, { timeout: 15_000 });
      const results = await new AxeBuilder({ page }).analyze();
      for (const v of results.violations.filter((v) => v.impact === "serious" || v.impact === "critical")) {
        problems.push(`${path}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
      }
    }
    const { ctx, p } = await newPage();
    await p.goto(url("/"));
    await p.getByRole("heading", { name: "Sign in to the rms dashboard" }).waitFor();
    await shot(p, "00-sign-in");
    const signIn = await new AxeBuilder({ page: p }).analyze();
    problems.push(...signIn.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `sign-in: ${v.id}`));
    await ctx.close();
    expect(problems).toEqual([]);
  }, 180_000);

  it("creates a resource and resends an event with the keyboard alone", async () => {
    await page.goto(url("/resources"));
    await page.getByRole("heading", { name: "Resources", exact: true }).waitFor();
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
    await page.getByText("Scheduled attempt").waitFor();
  });

  it("keeps the keyboard's place: filters, opens a resource, saves it, asks to delete it, takes that back, deletes it", async () => {
    const made = await stack.api("POST", "/v1/resources", { name: "Reached by keyboard", metadata: { reach: "keys" } });
    const id = made.body.id as string;
    await page.goto(url("/resources"));
    await page.getByRole("heading", { name: "Resources", exact: true }).waitFor();
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
    expect(await p.getByRole("button", { name: "Create resource" }).isDisabled()).toBe(true);
    await p.getByText("This key does not have the resources:write scope").first().waitFor();
    await p.goto(url(`/resources/${resourceId}`));
    await p.getByRole("heading", { name: "Made with curl" }).waitFor();
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
    expect(consoleErrors.filter((e) => !/Failed to load resource: the server responded with a status of (400|401|403|404)/.test(e))).toEqual([]);
    void context;
  });
});
