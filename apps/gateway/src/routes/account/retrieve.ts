import { defineLocalOperation } from "../../engine/operation.js";
import { AccountObject } from "./objects.js";

/**
 * GET /v1/account: the account and mode of the key, answered by the gateway from the key as core verified it for
 * this request (a local operation: never from the cache of verified keys, so a revoked key is refused at once).
 */
export const retrieveAccount = defineLocalOperation({
  method: "GET",
  path: "/v1/account",
  summary: "Retrieve the account of the key",
  scope: null,
  success: { status: 200, description: "The account and mode the key acts in, and the key's id and kind.", object: AccountObject },
  read:
    ({ tenant, key }) =>
    () =>
      Promise.resolve({ tenant, key }),
  reply: (caller) => caller,
});
