/**
 * Server-Sent Events as the WHATWG HTML standard reads them ("Server-sent events", the event stream's
 * interpretation): lines end with CRLF, LF or CR; `field: value` (one space after the colon is dropped); a line
 * starting with `:` is a comment; a blank line dispatches the message being built.
 */

/** One dispatched message: its data (the `data` lines joined by LF), type, and the last event id so far. */
export interface SseMessage {
  readonly data: string;
  /** `event`, or `message` when the block named none. */
  readonly event: string;
  /** The stream's last event id when the message was dispatched (an `id` line sets it for what follows too). */
  readonly lastEventId: string;
}

/** Turns text as it arrives (in pieces cut anywhere) into messages; `retry` is the last reconnection time the server asked for. */
export class SseParser {
  #pending = "";
  /** The previous piece ended with CR: an LF starting the next one ends that same line. */
  #afterCr = false;
  #data: string[] = [];
  #event = "";
  #lastEventId = "";
  #retryMs: number | undefined;

  get lastEventId(): string {
    return this.#lastEventId;
  }

  /** The milliseconds of the last valid `retry` line, if any. */
  get retryMs(): number | undefined {
    return this.#retryMs;
  }

  /** Feeds decoded text; answers the messages it completed, in order. */
  push(text: string): SseMessage[] {
    let input = text;
    if (this.#afterCr && input.startsWith("\n")) input = input.slice(1);
    this.#afterCr = false;
    const messages: SseMessage[] = [];
    let start = 0;
    for (let i = 0; i < input.length; i++) {
      const c = input.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = this.#pending + input.slice(start, i);
      this.#pending = "";
      if (c === 13) {
        if (i + 1 === input.length) this.#afterCr = true;
        else if (input.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
      const message = this.#line(line);
      if (message) messages.push(message);
    }
    this.#pending += input.slice(start);
    return messages;
  }

  #line(line: string): SseMessage | undefined {
    if (line === "") return this.#dispatch();
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.#data.push(value);
    else if (field === "event") this.#event = value;
    else if (field === "id" && !value.includes("\u0000")) this.#lastEventId = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.#retryMs = Number(value);
    return undefined;
  }

  #dispatch(): SseMessage | undefined {
    const data = this.#data;
    const event = this.#event;
    this.#data = [];
    this.#event = "";
    if (data.length === 0) return undefined;
    return { data: data.join("\n"), event: event === "" ? "message" : event, lastEventId: this.#lastEventId };
  }
}
