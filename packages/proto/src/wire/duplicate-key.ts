/** The server error code of a write refused by a unique index (MongoDB and every engine we run on). */
export const DUPLICATE_KEY_CODE = 11000;

/**
 * True for a write refused by a unique index. Checked by the error's code, not its
 * class, so this package needs no database driver (the driver's MongoServerError carries it).
 */
export function isDuplicateKeyError(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === DUPLICATE_KEY_CODE;
}
