import {
  ApiKeyService,
  PRESENTED_KEY_ID_METADATA,
  type CallContext,
  type ListApiKeysRequest,
  type RevokeApiKeyRequest,
  type ServiceImplementation,
} from "@rms/proto";
import { keyMessage } from "./key-message.js";
import type { AccountStore, KeyDocument } from "./store.js";
import { errors } from "../errors.js";
import { rpc, type PresentedKeyCheck } from "../grpc/define-rpc.js";
import { pageOf } from "../grpc/list-request.js";
import { isId } from "../ids.js";

/**
 * An account's keys, shown to the account (`GET /v1/api_keys`, the dashboard's keys page) and revoked by it
 * (`POST /v1/api_keys/{id}/revoke`); docs/decisions.md, "The dashboard for finding what went wrong". Never a secret
 * or a hash. Who may: listing, a secret key or a dashboard session's key of the tenant (the people of the account;
 * nothing listed is key material); revoking, a secret key only (a session, even one with every scope, cannot end
 * another key: a leaked session must not lock an account out of its integrations). The operator (no presented key)
 * may do both. The presented key was verified by the declaration's key check; here its kind is read once more.
 */

/** The id of the key the gateway says the caller presented; none for the operator's CLI. */
function presentedKeyIdOf(context: CallContext): string | null {
  const value = context.metadata.get(PRESENTED_KEY_ID_METADATA)[0];
  return typeof value === "string" ? value : null;
}

export function apiKeyService(store: AccountStore, checkKey: PresentedKeyCheck): ServiceImplementation<typeof ApiKeyService> {
  const presented = async (id: string | null): Promise<KeyDocument | null> => (id !== null && isId("key", id) ? store.getKey(id) : null);
  const listing = (presentedId: string | null) =>
    rpc.read({
      parse: (request: ListApiKeysRequest) => pageOf(request, "key", "key"),
      async load(page, { tenant, budget }) {
        if (presentedId !== null) {
          const key = await presented(presentedId);
          if (key?.kind !== "secret" && key?.dashboard_session === undefined) {
            throw errors.of("insufficient_scope", "Only a secret key, or a dashboard session's key, can list the account's keys.");
          }
        }
        const found = await store.listTenantKeys(tenant, page, budget.db());
        // A session whose creator is revoked or expired is listed as such (as every key check reads it).
        return { ...found, items: await store.keysInEffect(found.items, budget.db()) };
      },
      reply: (page) => ({ keys: page.items.map(keyMessage), hasMore: page.hasMore }),
    });
  const revocation = (presentedId: string | null) =>
    rpc.write({
      parse: (request: RevokeApiKeyRequest) => {
        if (!isId("key", request.id)) throw errors.notFound("key", request.id, "id");
        return { id: request.id };
      },
      async write({ id }, { tenant }) {
        if (presentedId !== null && (await presented(presentedId))?.kind !== "secret") {
          throw errors.of("insufficient_scope", "Only a secret key (sk_...) can revoke a key.");
        }
        const key = await store.getKey(id);
        if (!key || key.account !== tenant.account || key.livemode !== tenant.livemode) throw errors.notFound("key", id, "id");
        return store.inEffect((await store.revokeKey(id)) ?? key);
      },
      reply: (key) => ({ key: keyMessage(key) }),
    });
  const list = ApiKeyService.method.listApiKeys;
  const revoke = ApiKeyService.method.revokeApiKey;
  return {
    listApiKeys: (request, context) => listing(presentedKeyIdOf(context)).run(request, context, checkKey, list),
    revokeApiKey: (request, context) => revocation(presentedKeyIdOf(context)).run(request, context, checkKey, revoke),
  };
}
