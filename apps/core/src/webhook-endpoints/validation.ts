import { errors } from "../errors.js";
import { codePointLength } from "../metadata.js";
import { checkEndpointUrl } from "../webhooks/index.js";
import { ALL_EVENTS, DESCRIPTION_MAX, EVENT_TYPES, ROTATION_GRACE_DEFAULT_S, ROTATION_GRACE_MAX_S } from "./model.js";

const KNOWN = new Set<string>([ALL_EVENTS, ...EVENT_TYPES]);

/** The url as stored (normalized by the toolkit), or 400 `url_invalid` naming what is wrong. */
export function validateUrl(url: string, allowPrivate: boolean): string {
  if (url === "") throw errors.invalid("parameter_missing", "Missing required param: url.", "url");
  const check = checkEndpointUrl(url, { allowPrivate });
  if (!check.ok) throw errors.invalid("url_invalid", check.message, "url");
  return check.url;
}

/** At least one type, each `*` or a known type; duplicates dropped, order kept. */
export function validateEnabledEvents(types: readonly string[]): string[] {
  if (types.length === 0) throw errors.invalid("parameter_missing", "Missing required param: enabled_events (at least one event type, or '*').", "enabled_events");
  for (const type of types) {
    if (!KNOWN.has(type)) {
      throw errors.invalid("parameter_invalid", `Invalid enabled_events: '${type.slice(0, 64)}' is not '*' or a known event type (${EVENT_TYPES.join(", ")}).`, "enabled_events");
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
