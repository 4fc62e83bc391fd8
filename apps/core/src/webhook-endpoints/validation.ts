import { SIGNATURE_SCHEMES, type SignatureScheme } from "@rms/proto";
import { errors } from "../errors.js";
import { codePointLength } from "../metadata.js";
import { checkEndpointUrl } from "../webhooks/index.js";
import { isId } from "../ids.js";
import type { CreatedRange } from "../storage/keyset-list.js";
import type { AttemptDocument } from "../webhook-deliveries/model.js";
import { ALL_EVENTS, DESCRIPTION_MAX, RECOVER_MAX_AGE_S, EVENT_TYPES, ROTATION_GRACE_DEFAULT_S, ROTATION_GRACE_MAX_S } from "./model.js";

const KNOWN = new Set<string>([ALL_EVENTS, ...EVENT_TYPES]);

/** The url as stored (normalized by the toolkit), or 400 `url_invalid` naming what is wrong. */
export function validateUrl(url: string, allowPrivate: boolean): string {
  // As for a resource's name: "" is an attempt to unset, which a url cannot be (an update's `url=` is not "missing").
  if (url === "")
    throw errors.invalid(
      "parameter_invalid_empty",
      "You passed an empty string for 'url'. We assume empty values are an attempt to unset a parameter; however 'url' cannot be unset.",
      "url",
    );
  const check = checkEndpointUrl(url, { allowPrivate });
  if (!check.ok) throw errors.invalid("url_invalid", check.message, "url");
  return check.url;
}

/** At least one type, each `*` or a known type; duplicates dropped, order kept. */
export function validateEnabledEvents(types: readonly string[]): string[] {
  if (types.length === 0)
    throw errors.invalid("parameter_missing", "Missing required param: enabled_events (at least one event type, or '*').", "enabled_events");
  for (const type of types) {
    if (!KNOWN.has(type)) {
      throw errors.invalid(
        "parameter_invalid",
        `Invalid enabled_events: '${type.slice(0, 64)}' is not '*' or a known event type (${EVENT_TYPES.join(", ")}).`,
        "enabled_events",
      );
    }
  }
  return [...new Set(types)];
}

/** A description: empty means none (null); at most 500 code points. */
export function validateDescription(description: string): string | null {
  if (description === "") return null;
  if (codePointLength(description) > DESCRIPTION_MAX) {
    throw errors.invalid("string_too_long", `Invalid string: 'description' must be at most ${DESCRIPTION_MAX} characters long.`, "description");
  }
  return description;
}

/** Seconds the old secrets keep signing after a rotation: 0 to 604800, 86400 when not given. */
export function validateExpiresIn(expiresIn: bigint | undefined): number {
  if (expiresIn === undefined) return ROTATION_GRACE_DEFAULT_S;
  if (expiresIn < 0n || expiresIn > BigInt(ROTATION_GRACE_MAX_S)) {
    throw errors.invalid("parameter_invalid", `Invalid expires_in: must be an integer from 0 to ${ROTATION_GRACE_MAX_S} (seconds).`, "expires_in");
  }
  return Number(expiresIn);
}

/** An event id given as a filter or a path parameter (`param` names it). */
export function eventIdOf(value: string, param: string): string {
  if (!isId("evt", value)) throw errors.invalid("parameter_invalid", `Invalid ${param}: '${value.slice(0, 64)}' is not an event id.`, param);
  return value;
}

/** `created[gt|gte|lt|lte]` of the attempts list, each a Unix time (the wire carries int64). */
export function createdRangeOf(range: { gt?: bigint; gte?: bigint; lt?: bigint; lte?: bigint } | undefined): CreatedRange {
  const out: CreatedRange = {};
  for (const key of ["gt", "gte", "lt", "lte"] as const) {
    const value = range?.[key];
    if (value !== undefined) out[key] = Number(value);
  }
  return out;
}

/** The attempt status filter: empty is none. */
export function attemptStatusOf(value: string): AttemptDocument["status"] | undefined {
  if (value === "") return undefined;
  if (value !== "succeeded" && value !== "failed") throw errors.invalid("parameter_invalid", "Invalid status: must be one of succeeded or failed.", "status");
  return value;
}

/**
 * `since` of a recovery: a Unix time at most 14 days ago and not in the future. 0 is a value like any other (out of
 * that range): the gateway refuses a request without `since` as `parameter_missing` before it reaches core.
 */
export function sinceOf(since: bigint, nowMs = Date.now()): number {
  const nowS = Math.floor(nowMs / 1000);
  if (since > BigInt(nowS) || since < BigInt(nowS - RECOVER_MAX_AGE_S)) {
    throw errors.invalid("parameter_invalid", `Invalid since: must be a Unix time from ${nowS - RECOVER_MAX_AGE_S} (14 days ago) to ${nowS} (now).`, "since");
  }
  return Number(since);
}

/** `signature_scheme`: `v1` or `v1a`; undefined when not given (the empty string on the wire). */
export function signatureSchemeOf(value: string): SignatureScheme | undefined {
  if (value === "") return undefined;
  if (!(SIGNATURE_SCHEMES as readonly string[]).includes(value)) {
    throw errors.invalid("parameter_invalid", `Invalid signature_scheme: must be one of ${SIGNATURE_SCHEMES.join(" or ")}.`, "signature_scheme");
  }
  return value as SignatureScheme;
}
