import type { IncomingHttpHeaders } from "node:http";

/**
 * Secret and restricted keys by their shape (as core makes them). Publishable
 * keys are meant to be public and are not looked for. No boundary before the
 * prefix: `Authorization: Bearersk_test_…` or `x=sk_test_…` count as well.
 */
const LEAKABLE_KEY = /(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{32}/g;
/** At most this many distinct candidates per request are checked with core. */
export const MAX_CANDIDATES = 20;

/** %XX and \uXXXX escapes undone one by one, leniently (a malformed escape is kept as is). */
function unescapeLeniently(text: string): string {
  return text
    .replace(/\+/g, " ")
    .replace(/%([0-9a-fA-F]{2})/g, (_all, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    .replace(/\\u([0-9a-fA-F]{4})/g, (_all, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** Base64 (standard or URL-safe) runs long enough to hold a key, decoded (Basic credentials, tokens). */
function base64Decodings(text: string): string[] {
  return (text.match(/[A-Za-z0-9+/_-]{40,}={0,2}/g) ?? []).map((run) =>
    Buffer.from(run, run.includes("-") || run.includes("_") ? "base64url" : "base64").toString("latin1"),
  );
}

function collect(text: string, into: Set<string>): void {
  for (const view of [text, unescapeLeniently(text)]) {
    for (const match of view.matchAll(LEAKABLE_KEY)) {
      if (into.size >= MAX_CANDIDATES) return;
      into.add(match[0]);
    }
  }
}

/**
 * Every secret- or restricted-key-shaped string anywhere in a request: any
 * header (any Authorization scheme or none, Basic user or password), the URL
 * (path and query, escaped or not) and the body as far as it was read (form,
 * JSON with or without \u escapes, or anything else).
 */
export function leakedKeyCandidates(request: { headers: IncomingHttpHeaders; url: string; body?: Buffer }): string[] {
  const found = new Set<string>();
  for (const value of Object.values(request.headers)) {
    for (const line of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
      collect(line, found);
      for (const decoded of base64Decodings(line)) collect(decoded, found);
    }
  }
  collect(request.url, found);
  if (request.body && request.body.length > 0) collect(request.body.toString("latin1"), found);
  return [...found];
}

/** Candidates in the raw bytes of a request Node could not parse (e.g. headers over the size limit). */
export function leakedKeyCandidatesInRaw(raw: Buffer): string[] {
  const found = new Set<string>();
  const text = raw.toString("latin1");
  collect(text, found);
  for (const decoded of base64Decodings(text)) collect(decoded, found);
  return [...found];
}
