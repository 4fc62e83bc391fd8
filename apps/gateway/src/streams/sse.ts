/** Server-Sent Events (WHATWG HTML, "Server-sent events"): the framing of the API's streams (CONTRACT.md section 14). */

import { schemaRef, type JsonSchema } from "../schema/objects.js";

export const SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8";

/**
 * One event: `id`, `event` and one `data` line. `data` is JSON text, which holds no line break (JSON escapes them in
 * strings), so one line carries it; `id` and `event` are ids and type names of the API.
 */
export function sseFrame(id: string, event: string, data: string): string {
  return `id: ${id}\nevent: ${event}\ndata: ${data}\n\n`;
}

/** A comment line: keeps the connection (and every proxy on the way) from counting the stream as idle. */
export const KEEP_ALIVE_FRAME = ": keep-alive\n\n";

/** The headers of a stream's answer: no caching, no proxy buffering, no compression. */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  "Content-Type": SSE_CONTENT_TYPE,
  "Cache-Control": "no-cache, no-transform",
  "X-Accel-Buffering": "no",
};

/**
 * The API document's schema of a stream's answer: in OpenAPI 3.1 a `text/event-stream` schema describes one event as
 * a client's parser reads it (3.2 calls it `itemSchema`), so tools check each event, not the text. `data` is JSON
 * text of the named object; comment lines (`: keep-alive`) are no events.
 */
export function sseEventSchema(spec: { readonly id: RegExp; readonly event: JsonSchema; readonly object: string; readonly description: string }): JsonSchema {
  return {
    type: "object",
    description: spec.description,
    required: ["id", "event", "data"],
    properties: {
      id: { type: "string", pattern: spec.id.source },
      event: spec.event,
      data: { type: "string", contentMediaType: "application/json", contentSchema: schemaRef(spec.object) },
    },
  };
}
