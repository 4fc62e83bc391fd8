import type { RMS, WebhookEvent } from "@rms/sdk";
import { newEndpointSecret } from "@rms/webhook-signing";
import { forwardEvent } from "./forward.js";
import { type DeveloperIo, reconnectLine } from "./io.js";

export interface ListenOptions {
  /** Where each event is POSTed as a webhook delivery; none: the events are only printed. */
  readonly forwardTo?: URL;
  /** Only these types (exact, or `prefix.*`). */
  readonly events?: readonly string[];
  /** Start after this event (what a killed `listen` printed last): the events made since come first. */
  readonly since?: string;
  readonly json: boolean;
}

/**
 * `rms listen`: follows the account's event stream (outbound only: the API never connects to this machine) and
 * forwards each event, in the stream's order and one at a time, signed with a secret made for this session.
 * Prints the secret once the stream is open, then a line per event (`-->`) and per answer (`<--`). Runs until
 * interrupted (exit 0) or until the API refuses the stream (the SDK's error is thrown: a revoked key, a bad cursor).
 */
export async function listen(rms: RMS, options: ListenOptions, io: DeveloperIo): Promise<void> {
  const secret = newEndpointSecret();
  const print = (value: Record<string, unknown>, human: string) => io.stdout(`${options.json ? JSON.stringify(value) : human}\n`);
  let ready = false;
  const stream = rms.events.stream(
    { ...(options.events?.length ? { types: [...options.events] } : {}), ...(options.since ? { starting_after: options.since } : {}) },
    {
      signal: io.interrupted,
      onOpen: (response) => {
        if (ready) return io.stderr("Reconnected.\n");
        ready = true;
        print({ type: "ready", secret, request_id: response.requestId ?? null }, `Ready! Your webhook signing secret is ${secret} (^C to quit)`);
      },
      onReconnect: (info) => io.stderr(reconnectLine(info)),
    },
  );
  try {
    for await (const event of stream) {
      print({ type: "event", event }, `--> ${event.type} [${event.id}]`);
      if (!options.forwardTo) continue;
      await forwardOne(options.forwardTo, event, secret, print);
    }
  } catch (error) {
    if (io.interrupted?.aborted) return;
    throw error;
  }
}

async function forwardOne(url: URL, event: WebhookEvent, secret: string, print: (value: Record<string, unknown>, human: string) => void): Promise<void> {
  const outcome = await forwardEvent(url, event, secret);
  const common = { type: "forward", event: event.id, url: url.href, duration_ms: outcome.durationMs };
  if ("status" in outcome) print({ ...common, status: outcome.status }, `<-- [${outcome.status}] POST ${url.href} [${event.id}]`);
  else print({ ...common, status: null, error: outcome.error }, `<-- [ERR] POST ${url.href} [${event.id}] ${outcome.error}`);
}
