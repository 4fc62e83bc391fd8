import { keyHash } from "@rms/proto";
import { MODES, type CredentialedClient } from "./client.js";

/** The entries every core has, named by the domains' rows (domain.ts `callers`). */
export const BUILT_IN_NAMES = ["operator", "gateway"] as const;
export type BuiltInName = (typeof BUILT_IN_NAMES)[number];

/** The tokens of the built-in entries: the operator's always, the gateway's when one is configured. */
export interface BuiltInTokens {
  readonly operator: string;
  readonly gateway?: string | undefined;
}

/**
 * The operator and the gateway as entries of the caller table: each may call the methods whose row names it
 * (`methodCallers`, from domains.ts), on every account in both modes; the gateway only for a key its client
 * presented (accounts/presented-key.ts).
 */
export function builtInClients(tokens: BuiltInTokens, methodCallers: Readonly<Record<string, readonly BuiltInName[]>>): CredentialedClient[] {
  const methodsOf = (name: BuiltInName) => new Set(Object.keys(methodCallers).filter((path) => methodCallers[path]!.includes(name)));
  const entry = (name: BuiltInName, token: string): CredentialedClient => ({
    client: { name, kind: name, methods: methodsOf(name), accounts: "*", modes: new Set(MODES), presentedKeyOnly: name === "gateway" },
    tokenSha256: [keyHash(token)],
    tlsSans: [],
  });
  return [entry("operator", tokens.operator), ...(tokens.gateway ? [entry("gateway", tokens.gateway)] : [])];
}
