import { KeyKind } from "../gen/rms/v1/admin_pb.js";
import { nameMap } from "./name-map.js";
import type { Vocabulary } from "./vocabulary.js";

/** Accounts and their API keys (CONTRACT.md section 4, in ../shared/docs/): made by the operator, guarded by no scope. */
export const ACCOUNTS_VOCABULARY = {
  domain: "accounts",
  idPrefixes: ["acct", "key"],
  eventTypes: [],
  scopes: [],
} as const satisfies Vocabulary;

/** Key kinds as the API and the CLI name them. */
export const KEY_KIND = nameMap({ secret: KeyKind.SECRET, publishable: KeyKind.PUBLISHABLE, restricted: KeyKind.RESTRICTED });
export type KeyKindName = (typeof KEY_KIND.names)[number];
