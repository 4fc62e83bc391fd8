import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { newMasterKeyText } from "@rms/core/settings";

/** Thrown when no admin token can be found; the message is the one line to print. */
export class MissingAdminTokenError extends Error {}

/** The token given in the environment, else the one kept in `file`; undefined when neither has one. */
function givenToken(fromEnv: string | undefined, file: string): string | undefined {
  if (fromEnv) return fromEnv;
  try {
    return readFileSync(file, "utf8").trim() || undefined;
  } catch {
    return undefined; // no file yet
  }
}

/** RMS_ADMIN_TOKEN, else the development token that `npm start` keeps in .data/. */
export function readAdminToken(env: Record<string, string | undefined>, file: string): string {
  const token = givenToken(env.RMS_ADMIN_TOKEN, file);
  if (token) return token;
  throw new MissingAdminTokenError("no admin token: set RMS_ADMIN_TOKEN, or run `npm start` once to create a development token in .data/");
}

/** The token to run the stack with: RMS_ADMIN_TOKEN, or the development one, created on first start. */
export function ensureAdminToken(env: Record<string, string | undefined>, file: string): string {
  try {
    return readAdminToken(env, file);
  } catch (error) {
    if (!(error instanceof MissingAdminTokenError)) throw error;
    return createTokenFile(file);
  }
}

/** The gateway's own credential for core: RMS_GATEWAY_TOKEN, or the development one in .data/, created on first start. */
export function ensureGatewayToken(env: Record<string, string | undefined>, file: string): string {
  return givenToken(env.RMS_GATEWAY_TOKEN, file) ?? createTokenFile(file);
}

/** The key sealing webhook secrets: RMS_SECRET_KEY, or the development one in .data/, created on first start. */
export function ensureSecretKey(env: Record<string, string | undefined>, file: string): string {
  return givenToken(env.RMS_SECRET_KEY, file) ?? createTokenFile(file, newMasterKeyText());
}

function createTokenFile(file: string, token: string = randomBytes(32).toString("base64url")): string {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}

/**
 * Core's clients file for the stack: CORE_CLIENTS_FILE as given (core checks it), else the development one in
 * .data/, an empty table made on first start for the reader to fill in (docs/internal-clients.md).
 */
export function ensureClientsFile(env: Record<string, string | undefined>, file: string): string {
  if (env.CORE_CLIENTS_FILE || existsSync(file)) return file;
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${JSON.stringify({ clients: [] })}\n`, { mode: 0o600 });
  return file;
}
