import { RESOURCE_NAME_MAX } from "@rms/proto";
import { errors } from "../errors.js";
import { codePointLength } from "../metadata.js";

// Metadata rules are shared by every kind that carries metadata (../metadata.ts); re-exported for this domain's callers.
export { codePointLength, mergeMetadata, METADATA_KEY_MAX, METADATA_MAX_KEYS, METADATA_VALUE_MAX, sameMetadata } from "../metadata.js";

export const NAME_MAX_CODE_POINTS = RESOURCE_NAME_MAX;

/** A resource name: 1 to 200 code points, surrounding whitespace kept. */
export function validateName(name: string): string {
  if (name.length === 0)
    throw errors.invalid(
      "parameter_invalid_empty",
      "You passed an empty string for 'name'. We assume empty values are an attempt to unset a parameter; however 'name' cannot be unset.",
      "name",
    );
  if (codePointLength(name) > NAME_MAX_CODE_POINTS) {
    throw errors.invalid("string_too_long", `Invalid string: 'name' must be at most ${NAME_MAX_CODE_POINTS} characters long.`, "name");
  }
  return name;
}
