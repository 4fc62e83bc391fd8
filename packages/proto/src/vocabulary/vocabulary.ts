/**
 * What one domain names on the public API, declared once in its own file beside this one and read by
 * core, the gateway and `rms` alike: the prefixes of the ids it mints, the event types it records and
 * the scopes that guard it (with the scopes one implies). The lists every app needs (all id prefixes,
 * event types, scopes) are derived from the domain list in `index.ts`, never written out again.
 *
 * Why here and not in a package of its own: these names are part of the contract between the apps, as
 * the rest of @rms/proto's hand-written part is (enum name maps, scopes, list limits), and every app
 * already depends on this package; a second package would add a dependency edge and nothing else.
 */
export interface Vocabulary {
  /** The domain, as core's domain list names it (`apps/core/src/domains.ts`), or the gateway's (`servedBy`). */
  readonly domain: string;
  /** `gateway`: a domain the gateway serves from its own store (the request logs), which core's list does not hold. */
  readonly servedBy?: "gateway";
  /** Prefixes of the ids the domain mints (`res` for `res_…`). */
  readonly idPrefixes: readonly string[];
  /** The event types its changes record (`resource.created`), in the order the API lists them. */
  readonly eventTypes: readonly string[];
  /** The scopes that guard its operations, in the order the API lists them. */
  readonly scopes: readonly string[];
  /** Scopes a granted scope brings with it (`jobs:write` implies `jobs:read`). */
  readonly impliedScopes?: Readonly<Record<string, readonly string[]>>;
}
