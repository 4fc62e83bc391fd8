/**
 * The sizes of `metadata` on every kind that has it (CONTRACT.md section 3, in ../shared/docs/): core checks them
 * (apps/core/src/metadata.ts) and the gateway's parameter schemas and API description state them, from here.
 */
export const METADATA_LIMITS = {
  /** Most keys of one object's metadata (after an update's merge). */
  keys: 50,
  /** A key: 1 to this many characters (Unicode code points), no `[` or `]`. */
  keyLength: 40,
  /** A value: at most this many characters. */
  valueLength: 500,
} as const;
