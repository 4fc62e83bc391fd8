import { KEY_HASH_PATTERN, KEY_KIND, type AdminService, type ServiceImplementation } from "@rms/proto";
import type { Logger } from "pino";
import { clientOf } from "../clients/guard.js";
import { errors } from "../errors.js";
import { limitOf } from "../grpc/list-request.js";
import { isId } from "../ids.js";
import { hashSecret, isScope, parseSecret, type Scope } from "./secrets.js";
import { refuseIfNotLive } from "./presented-key.js";
import { keyMessage } from "./key-message.js";
import type { AccountStore } from "./store.js";

const invalidKey = () => errors.unauthenticated("api_key_invalid", "Invalid API key provided.");

/** The hash to look a key up by: of the secret when one is given, else the given hash (a caller that keeps no secret). */
function verifiedHash(secret: string, secretHash: string): string {
  if (secret !== "") {
    if (!parseSecret(secret)) throw invalidKey();
    return hashSecret(secret);
  }
  if (!KEY_HASH_PATTERN.test(secretHash)) throw invalidKey();
  return secretHash;
}

/** Accounts and keys: the operator's RPCs, plus VerifyKey for the gateway. */
export function adminService(store: AccountStore, logger: Logger): ServiceImplementation<typeof AdminService> {
  return {
    async createAccount() {
      const account = await store.createAccount();
      logger.info({ account_id: account._id }, "account created");
      return { account: { id: account._id, created: BigInt(account.created) } };
    },

    async listAccounts(request) {
      const limit = limitOf(request.limit);
      const accounts = await store.listAccounts(limit);
      return { accounts: accounts.map((a) => ({ id: a._id, created: BigInt(a.created) })) };
    },

    async createKey(request) {
      const kind = KEY_KIND.nameOf(request.kind);
      if (!kind) throw errors.invalid("parameter_invalid", "kind must be secret, publishable or restricted.", "kind");
      if (!isId("acct", request.accountId) || !(await store.getAccount(request.accountId))) {
        throw errors.notFound("account", request.accountId, "account");
      }
      const unknown = request.scopes.find((s) => !isScope(s));
      if (unknown !== undefined) throw errors.invalid("parameter_invalid", `Unknown scope '${unknown}'.`, "scopes");
      if (kind === "restricted" && request.scopes.length === 0) {
        throw errors.invalid("parameter_missing", "A restricted key needs at least one scope.", "scopes");
      }
      if (kind !== "restricted" && request.scopes.length > 0) {
        throw errors.invalid("parameter_invalid", "Only restricted keys take scopes.", "scopes");
      }
      const expiresAt = Number(request.expiresAt);
      if (expiresAt < 0) throw errors.invalid("parameter_invalid", "expires_at must be a Unix timestamp.", "expires_at");
      const { key, secret } = await store.createKey({
        account: request.accountId,
        kind,
        livemode: request.livemode,
        scopes: request.scopes as Scope[],
        expiresAt: expiresAt === 0 ? null : expiresAt,
      });
      logger.info({ key_id: key._id, account_id: key.account, kind, livemode: key.livemode }, "key created");
      return { key: keyMessage(key), secret };
    },

    async listKeys(request) {
      if (!isId("acct", request.accountId) || !(await store.getAccount(request.accountId))) {
        throw errors.notFound("account", request.accountId, "account");
      }
      return { keys: (await store.listKeysInEffect(request.accountId)).map(keyMessage) };
    },

    async revokeKey(request, context) {
      // By the presented secret (or its hash): what the gateway does with a key it saw over plain HTTP. By id: not the
      // gateway, so its credential alone cannot revoke keys it never saw.
      const bySecret = request.secret !== "" || request.secretHash !== "";
      const client = clientOf(context);
      if (!bySecret && client?.presentedKeyOnly) {
        throw errors.permissionDenied("method_not_allowed", `The ${client.name} client revokes a key by its presented secret only.`);
      }
      const key = bySecret
        ? await store.revokeKeyByHash(verifiedHash(request.secret, request.secretHash))
        : isId("key", request.keyId)
          ? await store.revokeKey(request.keyId)
          : null;
      if (!key) {
        if (bySecret) throw invalidKey();
        throw errors.notFound("key", request.keyId, "key");
      }
      logger.warn({ key_id: key._id, account_id: key.account, reason: request.reason || "operator" }, "key revoked");
      return { key: keyMessage(key) };
    },

    async verifyKey(request) {
      const hash = verifiedHash(request.secret, request.secretHash);
      // Found by an exact match on the SHA-256 of the whole secret, so its hash is that hash: comparing the two
      // again proves nothing. Lookup timing cannot leak the secret: it depends on the hash, which an
      // attacker cannot steer towards a stored one without a preimage.
      const found = await store.findKeyByHash(hash);
      if (!found) throw invalidKey();
      const key = await store.inEffect(found);
      // Asked to, a revoked or expired key is answered as it is (revoked_at / expires_at say why the caller must refuse it).
      if (!request.answerRefused) refuseIfNotLive(key);
      // The gateway verifies a key here before its first request and every minute (its cache): a use, too.
      if (key.revoked_at === null) store.noteUse(key);
      return { key: keyMessage(key) };
    },
  };
}
