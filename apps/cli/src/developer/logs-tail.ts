import type { RequestLog, RequestLogStreamParams, RMS } from "@rms/sdk";
import { type DeveloperIo, reconnectLine } from "./io.js";

export interface TailOptions {
  readonly filters: RequestLogStreamParams;
  readonly json: boolean;
}

const pad = (n: number) => String(n).padStart(2, "0");

/** `2026-12-06 09:30:01` in this machine's time zone. */
function localTime(unixSeconds: number): string {
  const at = new Date(unixSeconds * 1000);
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
}

/** One request for people: when, status, method and path, its id, the error's code, how long it took, and where it came from when not the API. */
export function requestLine(log: RequestLog): string {
  const error = log.error_code ? ` ${log.error_code}` : "";
  const replay = log.idempotent_replayed ? " (replayed)" : "";
  const source = log.source === "dashboard" ? " (dashboard)" : "";
  return `${localTime(log.created)} [${log.status}] ${log.method} ${log.path} [${log.id}]${error}${replay}${source} ${log.duration_ms} ms`;
}

/**
 * `rms logs tail`: the account's request logs (in the key's mode) as they are recorded, one line each (or the
 * request log object, `--json`), through the request-log stream with the list's filters. Says on stderr when it is
 * following; runs until interrupted or until the API refuses the stream.
 */
export async function tailLogs(rms: RMS, options: TailOptions, io: DeveloperIo): Promise<void> {
  let ready = false;
  const stream = rms.requestLogs.stream(options.filters, {
    signal: io.interrupted,
    onOpen: () => {
      if (ready) return io.stderr("Reconnected.\n");
      ready = true;
      io.stderr("Ready! Tailing request logs as they are recorded (^C to quit)\n");
    },
    onReconnect: (info) => io.stderr(reconnectLine(info)),
  });
  try {
    for await (const log of stream) io.stdout(`${options.json ? JSON.stringify(log) : requestLine(log)}\n`);
  } catch (error) {
    if (io.interrupted?.aborted) return;
    throw error;
  }
}
