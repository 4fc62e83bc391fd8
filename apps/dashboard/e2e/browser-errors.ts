// What the browser reported as errors during a test file's run, for its last test ("loaded nothing the CSP refused
// and threw nothing"): console errors (a CSP violation among them), uncaught exceptions, and failed loads with the
// call and the status they got. A 503 with Retry-After (the API's answer when what it depends on did not answer in
// time: core's call deadline, its 1 s health check behind /v1/status, a stream's feed not started within 10 s) whose
// call the SDK tried again and got through is printed, not counted: on a loaded machine that is the API doing what it
// says. A call that never got through, a 503 without Retry-After and every other 5xx still count.
import type { Page } from "playwright-core";

const FAILED_LOAD = /^Failed to load resource: the server responded with a status of (\d{3})/;

interface Answer {
  readonly status: number;
  readonly retryAfter: boolean;
}

export class BrowserErrors {
  /** Each error as reported: the page it was on, its text, and for a failed load its URL and status. */
  private readonly reported: { readonly line: string; readonly url?: string; readonly status?: number }[] = [];
  /** Every answer each URL got, in order. */
  private readonly answers = new Map<string, Answer[]>();

  watch(page: Page): void {
    page.on("console", (message) => {
      if (message.type() !== "error") return;
      const status = FAILED_LOAD.exec(message.text())?.[1];
      // A 5xx is recorded from its answer, with the call's method.
      if (Number(status) >= 500) return;
      const url = message.location().url;
      this.reported.push(
        status ? { line: `${page.url()}: ${message.text()}: ${url}`, url, status: Number(status) } : { line: `${page.url()}: ${message.text()}` },
      );
    });
    page.on("pageerror", (error) => this.reported.push({ line: `${page.url()}: ${error.message}` }));
    page.on("response", (response) => {
      const list = this.answers.get(response.url()) ?? [];
      list.push({ status: response.status(), retryAfter: response.headers()["retry-after"] !== undefined });
      this.answers.set(response.url(), list);
      // Which call a 5xx was (the console's line names only its URL).
      if (response.status() >= 500) {
        this.reported.push({
          line: `${page.url()}: ${response.request().method()} ${response.url()} answered ${response.status()}`,
          url: response.url(),
          status: response.status(),
        });
      }
    });
  }

  /**
   * The errors, but failed loads of the statuses the tests ask for on purpose (`expected`) and the API's 503s that
   * were got through (printed, with how many there were).
   */
  unexpected(expected: readonly number[]): string[] {
    const busy = this.reported.filter((e) => e.status === 503 && e.url !== undefined && this.gotThrough(e.url));
    if (busy.length > 0) {
      const lines = busy.map((e) => e.line).join("\n");
      console.log(`dashboard e2e: the API answered 503 with Retry-After (too busy) ${busy.length} time(s); each call got through later:\n${lines}`);
    }
    return this.reported.filter((e) => !busy.includes(e) && !(e.status !== undefined && expected.includes(e.status))).map((e) => e.line);
  }

  /** Whether every 503 `url` got came with Retry-After and its last answer was no 5xx. */
  private gotThrough(url: string): boolean {
    const list = this.answers.get(url) ?? [];
    const last = list.at(-1);
    return last !== undefined && last.status < 500 && list.every((a) => a.status !== 503 || a.retryAfter);
  }
}
