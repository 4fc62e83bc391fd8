import type { Operation } from "../../engine/operation.js";
import { retrieveAccount } from "./retrieve.js";

export const ACCOUNT_OPERATIONS: readonly Operation[] = [retrieveAccount];
