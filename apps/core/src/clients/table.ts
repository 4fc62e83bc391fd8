import { keyHash } from "@rms/proto";
import type { CoreClient, CredentialedClient } from "./client.js";
import { ClientsFileError } from "./file.js";

/** Who a call comes from: a client of the table, or nobody known (`anonymous`: no credential; `unknown`: one that names no client). */
export type Identity = { readonly client: CoreClient; readonly label: string } | { readonly client: null; readonly label: "anonymous" | "unknown" };

const ANONYMOUS: Identity = { client: null, label: "anonymous" };
const UNKNOWN: Identity = { client: null, label: "unknown" };

interface Lookup {
  readonly byTokenSha256: ReadonlyMap<string, CoreClient>;
  readonly bySan: ReadonlyMap<string, CoreClient>;
  readonly clients: readonly CoreClient[];
}

/** The lookups of a table's entries; throws ClientsFileError when a credential names two entries. */
function lookupOf(entries: readonly CredentialedClient[]): Lookup {
  const byTokenSha256 = new Map<string, CoreClient>();
  const bySan = new Map<string, CoreClient>();
  for (const { client, tokenSha256, tlsSans } of entries) {
    for (const hash of tokenSha256) {
      const other = byTokenSha256.get(hash);
      if (other)
        throw new ClientsFileError(`the token hash ${hash.slice(0, 12)}... of ${client.name} is also ${other.name}'s: every client has tokens of its own`);
      byTokenSha256.set(hash, client);
    }
    for (const san of tlsSans) {
      const other = bySan.get(san);
      if (other) throw new ClientsFileError(`the certificate name "${san}" of ${client.name} is also ${other.name}'s`);
      bySan.set(san, client);
    }
  }
  return { byTokenSha256, bySan, clients: entries.map((e) => e.client) };
}

/**
 * Core's callers, one table (docs/internal-clients.md): the built-in entries and those of CORE_CLIENTS_FILE,
 * which `replace` swaps whole (on SIGHUP) or not at all. A token is looked up by its SHA-256: only hashes are kept,
 * and a lookup keyed by the hash of a 128-bit-or-more secret tells a timing observer nothing of the secret.
 */
export class CallerTable {
  private lookup: Lookup;

  constructor(
    private readonly builtIn: readonly CredentialedClient[],
    entries: readonly CredentialedClient[] = [],
  ) {
    this.lookup = lookupOf([...builtIn, ...entries]);
  }

  /** The file's entries from now on, beside the built-in ones; throws (and keeps the table it had) when they clash. */
  replace(entries: readonly CredentialedClient[]): void {
    this.lookup = lookupOf([...this.builtIn, ...entries]);
  }

  /** Every client of the table now, built-in first. */
  get clients(): readonly CoreClient[] {
    return this.lookup.clients;
  }

  /**
   * Who presents this credential: a bearer token names its client (an unknown token is `unknown`, whatever
   * certificate came with it); without one, the first of the certificate's subject alternative names that the table
   * knows (`sans`: the names of a client certificate core's mutual TLS verified).
   */
  identify(token: string | null, sans: readonly string[]): Identity {
    if (token !== null) {
      const client = this.lookup.byTokenSha256.get(keyHash(token));
      return client ? { client, label: client.name } : UNKNOWN;
    }
    for (const san of sans) {
      const client = this.lookup.bySan.get(san);
      if (client) return { client, label: client.name };
    }
    return sans.length > 0 ? UNKNOWN : ANONYMOUS;
  }
}
