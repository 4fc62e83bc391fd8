import { AdminService, file_rms_v1_admin } from "@rms/proto";
import { implement, serviceEntry, type Domain } from "../domain.js";
import { adminService } from "./service.js";
import { AccountStore } from "./store.js";

/** Accounts and API keys: the operator's service, and key verification for the gateway. */
export const accountsDomain: Domain = {
  name: "accounts",
  files: [file_rms_v1_admin],
  services: [
    serviceEntry(AdminService, {
      createAccount: ["admin"],
      listAccounts: ["admin"],
      createKey: ["admin"],
      listKeys: ["admin"],
      // The gateway revokes any key it sees over plain HTTP (CONTRACT.md section 2, in ../shared/docs/).
      revokeKey: ["admin", "gateway"],
      verifyKey: ["admin", "gateway"],
    }),
  ],
  open({ db, logger }) {
    const store = new AccountStore(db);
    return {
      ensureIndexes: () => store.ensureIndexes(),
      implementations: [implement(AdminService, adminService(store, logger))],
    };
  },
};
