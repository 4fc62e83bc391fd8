import type { Caller } from "@rms/proto";
import type { Tenant } from "../caller.js";

/** The two modes of an account's data (CONTRACT.md section 4, in ../shared/docs/). */
export type Mode = "test" | "live";
export const MODES: readonly Mode[] = ["test", "live"];

/**
 * What an entry is: `operator` (the `rms` CLI and `npm start`, RMS_ADMIN_TOKEN) and `gateway` (the public API,
 * RMS_GATEWAY_TOKEN) are built in; `service` is an internal service from CORE_CLIENTS_FILE.
 */
export type ClientKind = "operator" | "gateway" | "service";

/** One entry of core's caller table (docs/internal-clients.md): who calls, and what it may ask for. */
export interface CoreClient extends Caller {
  readonly name: string;
  readonly kind: ClientKind;
  /** The gRPC paths it may call (`/rms.v1.ResourceService/GetResource`), whole services already expanded. */
  readonly methods: ReadonlySet<string>;
  /** The accounts it may name in a request's `tenant`: any (`*`) or these. */
  readonly accounts: "*" | ReadonlySet<string>;
  readonly modes: ReadonlySet<Mode>;
  /** Acts only for an API key its caller presented (the gateway): never on its own authority. */
  readonly presentedKeyOnly: boolean;
}

/** A client with the credentials that name it: SHA-256 hashes of its bearer tokens, and its certificate's SANs. */
export interface CredentialedClient {
  readonly client: CoreClient;
  /** Lower-case hex. */
  readonly tokenSha256: readonly string[];
  readonly tlsSans: readonly string[];
}

export function mayCall(client: CoreClient, method: string): boolean {
  return client.methods.has(method);
}

/** Whether the client may act on this account in this mode. */
export function mayActOn(client: CoreClient, tenant: Tenant): boolean {
  const accountAllowed = client.accounts === "*" || client.accounts.has(tenant.account);
  return accountAllowed && client.modes.has(tenant.livemode ? "live" : "test");
}
