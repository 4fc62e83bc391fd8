import { chmodSync, lstatSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";

/** Owner-only: the data directory holds key hashes, recorded responses, tokens and a TLS key. */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;
/** The umask that makes everything created from now on (by us and the children, who inherit it) owner-only. */
export const PRIVATE_UMASK = 0o077;

/**
 * Creates `dir` if needed and makes it and everything under it owner-only: directories 0700,
 * files 0600, whoever left them open; symbolic links are left alone.
 */
export function makePrivate(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const visit = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) return;
    if (stat.isDirectory()) {
      if ((stat.mode & 0o777) !== PRIVATE_DIR_MODE) chmodSync(path, PRIVATE_DIR_MODE);
      for (const name of readdirSync(path)) visit(join(path, name));
    } else if ((stat.mode & 0o777) !== PRIVATE_FILE_MODE) {
      chmodSync(path, PRIVATE_FILE_MODE);
    }
  };
  visit(dir);
}
