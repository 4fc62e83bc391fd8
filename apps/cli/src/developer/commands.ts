import { Argument, type Command, InvalidArgumentError, Option } from "commander";
import { type ApiFlags, apiClient, modeOfKey, withApiOptions } from "./api.js";
import type { DeveloperIo } from "./io.js";
import { listen } from "./listen.js";
import { tailLogs } from "./logs-tail.js";
import { FIXTURES, trigger, TriggerRefusedError } from "./trigger.js";

/**
 * The commands of a developer who holds an API key (CONTRACT.md section 14): `listen`, `trigger`, `logs tail`, on
 * `@rms/sdk` (the operator's commands talk to core instead).
 */

/** What the developer commands get from the CLI: the environment, the output, and ^C. */
export interface DeveloperContext {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** A signal aborted on SIGINT or SIGTERM, asked for by the commands that run until stopped. */
  readonly interrupted?: () => AbortSignal;
}

const ioOf = (context: DeveloperContext, follows: boolean): DeveloperIo => ({
  stdout: context.stdout,
  stderr: context.stderr,
  ...(follows && context.interrupted ? { interrupted: context.interrupted() } : {}),
});

function httpUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError("must be a URL such as http://localhost:3000/webhooks");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new InvalidArgumentError("must be an http:// or https:// URL");
  return url;
}

function commaList(value: string): string[] {
  return value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

function eventId(value: string): string {
  if (!/^evt_[0-9A-Za-z]+$/.test(value)) throw new InvalidArgumentError("must be an event id (evt_...)");
  return value;
}

export function listenCommand(command: Command, context: DeveloperContext): void {
  withApiOptions(
    command
      .description("follow the account's events (test or live: the key's mode) and POST each to a URL as a signed webhook delivery; outbound connections only")
      .option("--forward-to <url>", "where to POST each event, with the Standard Webhooks headers signed by the secret printed first", httpUrl)
      .option("--events <types>", "only these event types, comma-separated (exact, or a prefix like resource.*)", commaList)
      .option("--since <evt_id>", "start after this event (the last one a listen printed): what was made since comes first", eventId)
      .option("--json", "print one JSON object per line"),
  ).action(async (opts: ApiFlags & { forwardTo?: URL; events?: string[]; since?: string; json?: boolean }) => {
    const { rms } = apiClient(opts, context.env);
    await listen(
      rms,
      {
        ...(opts.forwardTo ? { forwardTo: opts.forwardTo } : {}),
        ...(opts.events ? { events: opts.events } : {}),
        ...(opts.since ? { since: opts.since } : {}),
        json: !!opts.json,
      },
      ioOf(context, true),
    );
  });
}

export function triggerCommand(command: Command, context: DeveloperContext): void {
  withApiOptions(
    command
      .description("make a real change in test mode that emits the event, and print what it made (a test-mode key only)")
      .addArgument(new Argument("<event>", "the event type").choices(Object.keys(FIXTURES)))
      .option("--json", "print each object made, then the result, one JSON object per line"),
  ).action(async (type: string, opts: ApiFlags & { json?: boolean }) => {
    const { rms, key } = apiClient(opts, context.env);
    if (modeOfKey(key) !== "test") {
      throw new TriggerRefusedError("rms trigger makes real changes, so it runs with a test-mode key only (sk_test_... or rk_test_...), never a live one");
    }
    await trigger(rms, type, { json: !!opts.json }, ioOf(context, false));
  });
}

export function logsTailCommand(command: Command, context: DeveloperContext): void {
  withApiOptions(
    command
      .description("print each request of the account (in the key's mode) as it is logged; the dashboard's own only with --source")
      .option("--status <status>", "an exact status (404) or a class (2xx, 4xx, 5xx)")
      .addOption(new Option("--method <method>", "only this method").choices(["GET", "POST", "DELETE"]))
      .option("--path <path>", "only this path: a collection (/v1/resources) or one object's (/v1/resources/res_...)")
      .option("--error-code <code>", "only requests answered with this error code (resource_missing, ...)")
      .addOption(new Option("--source <source>", "whose requests: the API's (default), the dashboard's, or all").choices(["api", "dashboard", "all"]))
      .option("--json", "print each request log as one JSON object per line"),
  ).action(
    async (
      opts: ApiFlags & {
        status?: string;
        method?: "GET" | "POST" | "DELETE";
        path?: string;
        errorCode?: string;
        source?: "api" | "dashboard" | "all";
        json?: boolean;
      },
    ) => {
      const { rms } = apiClient(opts, context.env);
      const filters = {
        ...(opts.status ? { status: opts.status } : {}),
        ...(opts.method ? { method: opts.method } : {}),
        ...(opts.path ? { path: opts.path } : {}),
        ...(opts.errorCode ? { error_code: opts.errorCode } : {}),
        ...(opts.source ? { source: opts.source } : {}),
      };
      await tailLogs(rms, { filters, json: !!opts.json }, ioOf(context, true));
    },
  );
}
