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
   * Present on a dashboard session's key only: the secret key that made it (null when the operator made it). Its
   * requests are recorded with `source: "dashboard"` (docs/request-logs.md). Absent on keys made before sessions
   * were marked: those count as `api`.
   */
  dashboard_session?: { created_by: string | null };
}

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
