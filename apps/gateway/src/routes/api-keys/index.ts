import type { Operation } from "../../engine/operation.js";
import { listApiKeys } from "./list.js";
import { revokeApiKey } from "./revoke.js";

/** The account's own view of its keys (docs/decisions.md: listing for secret keys and sessions, revoking for secret keys). */
export const API_KEY_OPERATIONS: readonly Operation[] = [listApiKeys, revokeApiKey];
