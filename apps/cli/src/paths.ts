import { fileURLToPath } from "node:url";
import { join, resolve } from "node:path";

/** The repository root (this file is apps/cli/{src,dist}/paths.*). */
export const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

/**
 * Development state kept between starts (embedded database, admin token, TLS
 * certificate): `.data/` at the repository root, or RMS_DATA_DIR (tests use a temporary one).
 */
export function dataDirOf(env: Record<string, string | undefined>): string {
  return env.RMS_DATA_DIR ? resolve(env.RMS_DATA_DIR) : join(repoRoot, ".data");
}

export function adminTokenFileOf(env: Record<string, string | undefined>): string {
  return join(dataDirOf(env), "admin-token");
}

export function gatewayTokenFileOf(env: Record<string, string | undefined>): string {
  return join(dataDirOf(env), "gateway-token");
}

/** The development key that seals webhook secrets at rest (RMS_SECRET_KEY when set instead). */
export function secretKeyFileOf(env: Record<string, string | undefined>): string {
  return join(dataDirOf(env), "secret-key");
}

/** The development caller table of core (CORE_CLIENTS_FILE when set instead): `npm start` makes an empty one. */
export function clientsFileOf(env: Record<string, string | undefined>): string {
  return env.CORE_CLIENTS_FILE ? resolve(env.CORE_CLIENTS_FILE) : join(dataDirOf(env), "clients.json");
}

/** The process id of the core `npm start` runs, while it runs: `kill -HUP "$(cat .data/core.pid)"` makes it read its clients file again. */
export function corePidFileOf(env: Record<string, string | undefined>): string {
  return join(dataDirOf(env), "core.pid");
}
