import type { Collection, Db } from "mongodb";
import { newId } from "../ids.js";
import { displayPrefix, grantedScopes, hashSecret, newSecret, type KeyKindName, type Scope } from "./secrets.js";

export interface AccountDocument {
  _id: string;
  created: number;
}

export interface KeyDocument {
  _id: string;
  account: string;
  kind: KeyKindName;
  livemode: boolean;
  scopes: Scope[];
  /** SHA-256 of the secret; the secret itself is never stored. */
  hash: string;
  prefix: string;
  created: number;
  expires_at: number | null;
  revoked_at: number | null;
  /**
   * Present on a dashboard session's key only: the secret key that made it (null when the operator made it), which
   * it ends with (`inEffect`); its requests are recorded with `source: "dashboard"` (docs/request-logs.md). Absent on keys
   * made before sessions were marked: those count as `api` and only expire.
   */
  dashboard_session?: { created_by: string | null };
  /** Unix seconds of a use, noted at most every LAST_USED_GRANULARITY_S (`noteUse`); absent before the first. */
  last_used_at?: number;
}

/** The earlier of two optional times (null: never). */
function earlier(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}

/**
 * A dashboard session's key as it is in effect: revoked once its creator is (at the earlier of the two times), and
 * expired at the earlier of the two expiries. A creator that cannot be found ends it too. Any other key as it is.
 */
export function inEffectWith(key: KeyDocument, creator: KeyDocument | null): KeyDocument {
  const createdBy = key.dashboard_session?.created_by;
  if (createdBy === undefined || createdBy === null) return key;
  if (!creator || creator._id !== createdBy) return { ...key, revoked_at: earlier(key.revoked_at, key.created) };
  return { ...key, revoked_at: earlier(key.revoked_at, creator.revoked_at), expires_at: earlier(key.expires_at, creator.expires_at) };
}

/**
 * How often a key's use is written, at most: a key's "last used" is right to within this, and its requests cost no
 * write each (one per key per 5 minutes, whatever its rate or the number of cores: the write's filter lets only the
 * first through).
 */
export const LAST_USED_GRANULARITY_S = 300;

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Accounts and their API keys. */
export class AccountStore {
  readonly accounts: Collection<AccountDocument>;
  readonly keys: Collection<KeyDocument>;

  constructor(db: Db) {
    this.accounts = db.collection<AccountDocument>("accounts");
    this.keys = db.collection<KeyDocument>("api_keys");
  }

  async ensureIndexes(): Promise<void> {
    await this.keys.createIndex({ hash: 1 }, { unique: true, name: "hash_unique" });
    await this.keys.createIndex({ account: 1, _id: -1 }, { name: "account_keys" });
    // The account's own list of its keys, in one mode (`GET /v1/api_keys`), newest first by cursor.
    await this.keys.createIndex({ account: 1, livemode: 1, _id: -1 }, { name: "tenant_keys" });
  }

  /** One page of a tenant's keys, newest first, by keyset on the id (`tenant_keys`). */
  async listTenantKeys(
    tenant: { account: string; livemode: boolean },
    page: { limit: number; startingAfter?: string; endingBefore?: string },
    options: { timeoutMS?: number } = {},
  ): Promise<{ items: KeyDocument[]; hasMore: boolean }> {
    const filter: Record<string, unknown> = { account: tenant.account, livemode: tenant.livemode };
    const backwards = page.endingBefore !== undefined;
    if (page.startingAfter !== undefined) filter["_id"] = { $lt: page.startingAfter };
    if (page.endingBefore !== undefined) filter["_id"] = { $gt: page.endingBefore };
    const found = await this.keys
      .find(filter, { sort: { _id: backwards ? 1 : -1 }, limit: page.limit + 1, projection: { hash: 0 }, hint: "tenant_keys", ...options })
      .toArray();
    const items = found.slice(0, page.limit);
    return { items: backwards ? items.reverse() : items, hasMore: found.length > page.limit };
  }

  /**
   * Notes that `key` was used now, when its last noted use is older than LAST_USED_GRANULARITY_S: at most one write
   * per key per period (the filter lets only the first of concurrent ones through), never awaited by the request.
   */
  noteUse(key: Pick<KeyDocument, "_id" | "last_used_at">, now: number = nowSeconds()): void {
    if (key.last_used_at !== undefined && key.last_used_at > now - LAST_USED_GRANULARITY_S) return;
    const stale = { $or: [{ last_used_at: { $exists: false } }, { last_used_at: { $lte: now - LAST_USED_GRANULARITY_S } }] };
    void this.keys.updateOne({ _id: key._id, ...stale }, { $set: { last_used_at: now } }).catch(() => {});
  }

  async createAccount(): Promise<AccountDocument> {
    const account = { _id: newId("acct"), created: nowSeconds() };
    await this.accounts.insertOne(account);
    return account;
  }

  getAccount(id: string): Promise<AccountDocument | null> {
    return this.accounts.findOne({ _id: id });
  }

  listAccounts(limit: number): Promise<AccountDocument[]> {
    return this.accounts.find({}, { sort: { _id: -1 }, limit }).toArray();
  }

  async createKey(input: {
    account: string;
    kind: KeyKindName;
    livemode: boolean;
    scopes: Scope[];
    expiresAt: number | null;
    /** A dashboard session's key: the secret key that made it (null: the operator). */
    dashboardSession?: { createdBy: string | null };
  }): Promise<{ key: KeyDocument; secret: string }> {
    const secret = newSecret(input.kind, input.livemode);
    const key: KeyDocument = {
      _id: newId("key"),
      account: input.account,
      kind: input.kind,
      livemode: input.livemode,
      scopes: grantedScopes(input.kind, input.scopes),
      hash: hashSecret(secret),
      prefix: displayPrefix(secret),
      created: nowSeconds(),
      expires_at: input.expiresAt,
      revoked_at: null,
      ...(input.dashboardSession ? { dashboard_session: { created_by: input.dashboardSession.createdBy } } : {}),
    };
    await this.keys.insertOne(key);
    return { key, secret };
  }

  listKeys(account: string): Promise<KeyDocument[]> {
    return this.keys.find({ account }, { sort: { _id: -1 } }).toArray();
  }

  /** By primary key: the cheap read behind every operation call's key check. */
  getKey(id: string, options: { timeoutMS?: number } = {}): Promise<KeyDocument | null> {
    return this.keys.findOne({ _id: id }, options);
  }

  /** The key as it is in effect (`inEffectWith`): a dashboard session's key costs one more read, of its creator. */
  async inEffect(key: KeyDocument, options: { timeoutMS?: number } = {}): Promise<KeyDocument> {
    const createdBy = key.dashboard_session?.created_by;
    if (createdBy === undefined || createdBy === null) return key;
    return inEffectWith(key, await this.getKey(createdBy, options));
  }

  /** The account's keys as they are in effect: a session's creator is one of them, so no more reads. */
  async listKeysInEffect(account: string): Promise<KeyDocument[]> {
    return this.keysInEffect(await this.listKeys(account));
  }

  /** Keys as they are in effect (`inEffectWith`): the sessions' creators not among them in one more read by `_id`. */
  async keysInEffect(keys: readonly KeyDocument[], options: { timeoutMS?: number } = {}): Promise<KeyDocument[]> {
    const byId = new Map(keys.map((key) => [key._id, key]));
    const missing = new Set<string>();
    for (const key of keys) {
      const createdBy = key.dashboard_session?.created_by;
      if (typeof createdBy === "string" && !byId.has(createdBy)) missing.add(createdBy);
    }
    if (missing.size > 0) {
      const creators = await this.keys.find({ _id: { $in: [...missing] } }, { projection: { hash: 0 }, ...options }).toArray();
      for (const creator of creators) byId.set(creator._id, creator);
    }
    return keys.map((key) => inEffectWith(key, byId.get(key.dashboard_session?.created_by ?? "") ?? null));
  }

  findKeyByHash(hash: string): Promise<KeyDocument | null> {
    return this.keys.findOne({ hash });
  }

  /** Revokes once: the first revocation time is kept. Returns null for an unknown key. */
  async revokeKey(id: string): Promise<KeyDocument | null> {
    await this.keys.updateOne({ _id: id, revoked_at: null }, { $set: { revoked_at: nowSeconds() } });
    return this.keys.findOne({ _id: id });
  }

  /** Revokes the key whose secret has this hash (`hash_unique`); null when no key has it. */
  async revokeKeyByHash(hash: string): Promise<KeyDocument | null> {
    await this.keys.updateOne({ hash, revoked_at: null }, { $set: { revoked_at: nowSeconds() } });
    return this.keys.findOne({ hash });
  }
}
