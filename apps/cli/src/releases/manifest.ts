// What a packed release database holds, as the maker wrote it through the public API (make-data.ts) and the
// packed-data test reads it back (releases.e2e.test.ts): `manifest.json` beside `db.tar.gz`.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../paths.js";

/** Where the packed releases are kept: one folder per release, `<release>/manifest.json` and `<release>/db.tar.gz`. */
export const RELEASES_DATA_DIR = join(repoRoot, "apps", "cli", "test-data", "releases");
export const ARCHIVE_FILE = "db.tar.gz";
export const MANIFEST_FILE = "manifest.json";

/** A key as the admin service made it, with its secret (test data: never a real credential). */
export interface ManifestKey {
  id: string;
  secret: string;
  account: string;
  kind: "secret" | "publishable" | "restricted";
  livemode: boolean;
  /** The scopes the admin service listed for it. */
  scopes: string[];
  /** Unix seconds, 0: none. */
  expires_at: number;
  revoked: boolean;
  /** What a request with it answers now: 200, or the 401's code. */
  state: "valid" | "api_key_expired" | "api_key_revoked";
}

/** One GET as the maker sent it and what it answered (a list, one object, an error). */
export interface ManifestRead {
  name: string;
  /** The name of the key it was sent with (`keys`). */
  key: string;
  path: string;
  status: number;
  body: unknown;
  /**
   * `exact`: the same answer (fields the release added aside); `includes`: a list whose recorded items are all still
   * there, in the same order, with newer ones beside them (a webhook's attempts, which pending deliveries add to).
   */
  compare: "exact" | "includes";
}

/** A POST under an Idempotency-Key, and its answer byte for byte: a retry after the upgrade answers the same. */
export interface ManifestReplay {
  key: string;
  path: string;
  form: string;
  idempotency_key: string;
  status: number;
  body: string;
}

/** What one key may do: a request per scope, and the status it got. */
export interface ManifestProbe {
  key: string;
  probe: string;
  method: string;
  path: string;
  status: number;
}

export interface ManifestFile {
  id: string;
  sha256: string;
  bytes: number;
}

export interface ManifestEndpoint {
  id: string;
  scheme: "v1" | "v1a";
  /** `v1`: every `whsec_` secret that signs now (during a rotation's grace, the old one too), newest first. */
  secrets: string[];
  /** `v1a`: the `whpk_` public key. */
  public_key?: string;
}

export interface ReleaseManifest {
  release: string;
  commit: string;
  /** Unix seconds: when the maker began and when it ended its writes (everything recorded is at or before `made_to`). */
  made_from: number;
  made_to: number;
  mongod: { version: string; feature_compatibility_version: string };
  /** The database name the processes used (MONGODB_DATABASE). */
  database: string;
  archive: { file: string; sha256: string; bytes: number };
  /** The settings the release ran with that the data depends on: RMS_SECRET_KEY seals webhook secrets. */
  settings: { RMS_SECRET_KEY: string };
  accounts: Record<string, string>;
  keys: Record<string, ManifestKey>;
  endpoints: Record<string, ManifestEndpoint>;
  files: Record<string, ManifestFile>;
  /** Objects whose event sequence the test continues: id -> the highest sequence recorded. */
  sequences: Record<string, number>;
  /** Events whose deliveries to an endpoint were still pending when the release stopped: endpoint name -> event ids. */
  pending_deliveries: Record<string, string[]>;
  reads: ManifestRead[];
  replays: ManifestReplay[];
  probes: ManifestProbe[];
}

/**
 * A key as `manifest.json` keeps it: its secret as base64 (`secret_base64`), so the file holds no text shaped like an
 * API key for secret scanners to report. The keys are those of a throwaway database made on loopback; test data only.
 */
type StoredKey = Omit<ManifestKey, "secret"> & { secret_base64: string };
type StoredManifest = Omit<ReleaseManifest, "keys"> & { keys: Record<string, StoredKey> };

export function readManifest(release: string): ReleaseManifest {
  const stored = JSON.parse(readFileSync(join(RELEASES_DATA_DIR, release, MANIFEST_FILE), "utf8")) as StoredManifest;
  const keys = Object.fromEntries(
    Object.entries(stored.keys).map(([name, { secret_base64, ...key }]) => [name, { ...key, secret: Buffer.from(secret_base64, "base64").toString("utf8") }]),
  );
  return { ...stored, keys };
}

/** The manifest's text as `manifest.json` keeps it (readManifest reads it back). */
export function manifestText(manifest: ReleaseManifest): string {
  const keys = Object.fromEntries(
    Object.entries(manifest.keys).map(([name, { secret, ...key }]) => [name, { ...key, secret_base64: Buffer.from(secret, "utf8").toString("base64") }]),
  );
  return `${JSON.stringify({ ...manifest, keys } satisfies StoredManifest, null, 2)}\n`;
}
