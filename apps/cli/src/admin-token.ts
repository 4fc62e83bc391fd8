import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** Thrown when no admin token can be found; the message is the one line to print. */
export class MissingAdminTokenError extends Error {}

/** RMS_ADMIN_TOKEN, else the development token that `npm start` keeps in .data/. */
export function readAdminToken(env: Record<string, string | undefined>, file: string): string {
  if (env.RMS_ADMIN_TOKEN) return env.RMS_ADMIN_TOKEN;
  try {
    const token = readFileSync(file, "utf8").trim();
    if (token) return token;
  } catch {
    // fall through to the error below
  }
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
  if (env.RMS_GATEWAY_TOKEN) return env.RMS_GATEWAY_TOKEN;
  try {
    const token = readFileSync(file, "utf8").trim();
    if (token) return token;
  } catch {
    // none yet
  }
  return createTokenFile(file);
}

function createTokenFile(file: string): string {
  const token = randomBytes(32).toString("base64url");
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}
