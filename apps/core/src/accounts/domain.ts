import { AdminService, ApiKeyService } from "@rms/proto";
import { implement, serviceEntry, type Domain } from "../domain.js";
import { adminService } from "./service.js";
import { AccountStore } from "./store.js";
import { apiKeyService } from "./tenant-keys.js";

/**
 * Accounts and API keys: the operator's service and key verification for the gateway (AdminService), and the
 * account's own view of its keys (ApiKeyService: `GET /v1/api_keys`, `POST /v1/api_keys/{id}/revoke`).
 */
export const accountsDomain: Domain = {
  name: "accounts",
  files: [AdminService.file, ApiKeyService.file],
  services: [
    serviceEntry(AdminService, {
      createAccount: ["operator"],
      listAccounts: ["operator"],
      createKey: ["operator"],
      listKeys: ["operator"],
      // The gateway revokes any key it sees over plain HTTP (CONTRACT.md section 2, in ../shared/docs/).
      revokeKey: ["operator", "gateway"],
      verifyKey: ["operator", "gateway"],
    }),
    serviceEntry(ApiKeyService, { listApiKeys: ["operator", "gateway"], revokeApiKey: ["operator", "gateway"] }),
  ],
  open({ db, logger, checkKey }) {
    const store = new AccountStore(db);
    return {
      ensureIndexes: () => store.ensureIndexes(),
      implementations: [implement(AdminService, adminService(store, logger)), implement(ApiKeyService, apiKeyService(store, checkKey))],
    };
  },
};
