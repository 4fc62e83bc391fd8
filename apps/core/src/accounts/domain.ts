import { AdminService } from "@rms/proto";
import { serviceDomain } from "../domain.js";
import { adminService } from "./service.js";
import { AccountStore } from "./store.js";

/** Accounts and API keys: the operator's service, and key verification for the gateway. */
export const accountsDomain = serviceDomain({
  name: "accounts",
  service: AdminService,
  callers: {
    createAccount: ["operator"],
    listAccounts: ["operator"],
    createKey: ["operator"],
    listKeys: ["operator"],
    // The gateway revokes any key it sees over plain HTTP (CONTRACT.md section 2, in ../shared/docs/).
    revokeKey: ["operator", "gateway"],
    verifyKey: ["operator", "gateway"],
  },
  open({ db, logger }) {
    const store = new AccountStore(db);
    return { indexes: store, implementation: adminService(store, logger) };
  },
});
