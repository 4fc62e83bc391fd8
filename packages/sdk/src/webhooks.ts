import { WebhookVerificationError } from "./errors.js";
import type { WebhookEvent } from "./gen/operations.js";

/**
 * Webhook deliveries checked as Standard Webhooks says: the `webhook-signature` header holds one or more
 * `v1,<base64 HMAC-SHA256>` (an endpoint's `whsec_` secret) or `v1a,<base64 Ed25519>` (its `whpk_` public key)
 * signatures over `<webhook-id>.<webhook-timestamp>.<body>`, and the timestamp is within 5 minutes of now. WebCrypto
 * does the work (Node 20+, browsers, edge runtimes); the checks are constant-time.
 */

/** How far a delivery's timestamp may be from now: 5 minutes, as Standard Webhooks says. */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

/** A delivery's headers: a Headers object, or Node's `req.headers` (names in lower case). */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyOptions {
  /** Seconds a timestamp may be off (default 300). */
  readonly toleranceSeconds?: number;
  /** The time to check against, in Unix seconds (default now). */
  readonly now?: number;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof Headers !== "undefined" && headers instanceof Headers) return headers.get(name) ?? undefined;
  const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  const value = record[name] ?? Object.entries(record).find(([key]) => key.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? value.join(" ") : (value as string | undefined);
}

function base64Bytes(text: string, what: string): Uint8Array<ArrayBuffer> {
  try {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  } catch {
    throw new WebhookVerificationError(`${what} is not base64`);
  }
}

const encoder = new TextEncoder();

/** The raw body as bytes (it must be the body exactly as received: parsing and serializing it again breaks the signature). */
function bodyBytes(payload: string | Uint8Array): Uint8Array {
  return typeof payload === "string" ? encoder.encode(payload) : payload;
}

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** The key `secret` names, and the signature scheme it checks: `v1` for `whsec_`, `v1a` for `whpk_`. */
async function keyOf(secret: string): Promise<{ scheme: "v1" | "v1a"; key: CryptoKey }> {
  if (secret.startsWith("whsec_")) {
    const key = await crypto.subtle.importKey("raw", base64Bytes(secret.slice(6), "the secret"), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    return { scheme: "v1", key };
  }
  if (secret.startsWith("whpk_")) {
    const raw = base64Bytes(secret.slice(5), "the public key");
    if (raw.length !== 32) throw new WebhookVerificationError("the public key is not 32 bytes of Ed25519");
    return { scheme: "v1a", key: await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]) };
  }
  throw new WebhookVerificationError("the secret must be an endpoint's whsec_ secret (v1) or whpk_ public key (v1a)");
}

/**
 * Checks a delivery and answers its event, typed by its `type`; throws WebhookVerificationError when the headers are
 * missing, the timestamp is more than 5 minutes away, or no signature of the key's scheme matches.
 */
export async function verify(payload: string | Uint8Array, headers: WebhookHeaders, secret: string, options: VerifyOptions = {}): Promise<WebhookEvent> {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature header");
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError("webhook-timestamp is not Unix seconds");
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS;
  if (Math.abs(now - Number(timestamp)) > tolerance) throw new WebhookVerificationError(`webhook-timestamp is more than ${tolerance} seconds from now`);
  const { scheme, key } = await keyOf(secret);
  const body = bodyBytes(payload);
  const signed = concat(encoder.encode(`${id}.${timestamp}.`), body);
  for (const entry of signatures.split(" ")) {
    const comma = entry.indexOf(",");
    if (comma < 0 || entry.slice(0, comma) !== scheme) continue;
    let signature: Uint8Array<ArrayBuffer>;
    try {
      signature = base64Bytes(entry.slice(comma + 1), "a signature");
    } catch {
      continue;
    }
    const algorithm = scheme === "v1" ? "HMAC" : "Ed25519";
    if (await crypto.subtle.verify(algorithm, key, signature, signed)) return parseEvent(body);
  }
  throw new WebhookVerificationError(`no ${scheme} signature in webhook-signature matches`);
}

function parseEvent(body: Uint8Array): WebhookEvent {
  try {
    return JSON.parse(new TextDecoder().decode(body)) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError("the signed body is not JSON");
  }
}

/** Webhook verification, also exported on its own (`import { Webhooks } from "@rms/sdk"`). */
export const Webhooks = { verify } as const;
