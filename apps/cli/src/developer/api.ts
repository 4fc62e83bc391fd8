import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { RMS } from "@rms/sdk";
import { type Command, InvalidArgumentError } from "commander";
import { ConfigError } from "../config.js";
import { dataDirOf } from "../paths.js";

/**
 * How the developer commands reach the API (CONTRACT.md section 14, "The CLI for developers who hold an API key"):
 * the key, the API's base and the certificate to trust, from flags or the environment, through `@rms/sdk`.
 */

/** Where the API is when neither --api-base nor RMS_API_BASE says: what `npm start` serves. */
export const DEFAULT_API_BASE = "https://localhost:8443";

export interface ApiFlags {
  readonly apiKey?: string;
  readonly apiBase?: string;
  readonly ca?: string;
}

/** The options every developer command takes. */
export function withApiOptions(command: Command): Command {
  return command
    .option("--api-key <key>", "the API key (sk_..., rk_...; default: RMS_API_KEY)")
    .option("--api-base <url>", `where the API is (default: RMS_API_BASE, else ${DEFAULT_API_BASE})`, apiBase)
    .option(
      "--ca <file>",
      "a PEM certificate to trust besides the system's (default: RMS_CA; for a localhost base, the development certificate of `npm start`)",
    );
}

/** `https://host[:port][/path]`, without a trailing slash: the API is HTTPS only (a key sent over plain HTTP is revoked). */
function apiBase(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError("must be a URL such as https://localhost:8443");
  }
  if (url.protocol !== "https:") throw new InvalidArgumentError("must be https:// (the API is HTTPS only, and revokes a key sent to it over plain HTTP)");
  return value.replace(/\/+$/, "");
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** The mode a key works in, by its prefix: `test`, `live`, or undefined for a text that is no key of this API. */
export function modeOfKey(key: string): "test" | "live" | undefined {
  return /^(sk|rk|pk)_(test|live)_/.exec(key)?.[2] as "test" | "live" | undefined;
}

export interface ApiClient {
  readonly rms: RMS;
  readonly key: string;
  readonly baseUrl: string;
  /** The certificate file trusted besides the system's roots, if any (said in errors about certificates). */
  readonly caFile: string | undefined;
}

/**
 * The SDK's client for a developer command. The certificate: `--ca`, else RMS_CA, else, when the base is this
 * machine (localhost, 127.x, [::1]) and `npm start`'s development certificate exists (RMS_DATA_DIR's `tls/cert.pem`),
 * that one, so `npx rms listen` works against `npm start` as it is.
 */
export function apiClient(flags: ApiFlags, env: Readonly<Record<string, string | undefined>>): ApiClient {
  const key = flags.apiKey ?? env.RMS_API_KEY;
  if (!key) throw new ConfigError("an API key is needed: --api-key sk_test_... or RMS_API_KEY (npm start prints a test key on its first start)");
  const baseUrl = flags.apiBase ?? (env.RMS_API_BASE ? checkedBase(env.RMS_API_BASE) : DEFAULT_API_BASE);
  const host = new URL(baseUrl).hostname;
  const development = join(dataDirOf(env as Record<string, string | undefined>), "tls", "cert.pem");
  const caFile = flags.ca ?? env.RMS_CA ?? (LOOPBACK.test(host) && existsSync(development) ? development : undefined);
  let ca: string | undefined;
  if (caFile !== undefined) {
    try {
      ca = readFileSync(caFile, "utf8");
    } catch (error) {
      throw new ConfigError(`cannot read the certificate ${caFile} (--ca or RMS_CA): ${(error as Error).message}`);
    }
  }
  return { rms: new RMS(key, { baseUrl, ...(ca !== undefined ? { ca } : {}) }), key, baseUrl, caFile };
}

function checkedBase(value: string): string {
  try {
    return apiBase(value);
  } catch (error) {
    throw new ConfigError(`RMS_API_BASE ${(error as Error).message}`);
  }
}
