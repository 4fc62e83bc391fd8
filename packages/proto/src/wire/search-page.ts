import { createHash } from "node:crypto";

/**
 * The search's `next_page` token (docs/decisions.md, "Filters and search"): opaque to clients, base64url of
 * `1.<position id>.<digest of the query>`, so a token is refused with another query. Here, not in core, so the
 * API document's example of `page` is a token the server takes (examples are valid requests).
 */
const TOKEN_VERSION = "1";

/** A short digest of the query a page token belongs to. */
function queryDigest(query: string): string {
  return createHash("sha256").update(query).digest("base64url").slice(0, 16);
}

/** The token that continues `query` after the resource `position`. */
export function searchPageToken(position: string, query: string): string {
  return Buffer.from(`${TOKEN_VERSION}.${position}.${queryDigest(query)}`).toString("base64url");
}

/** The position a token of `query` continues from; undefined when it is not a token of this query (the id's form is the caller's to check). */
export function searchPagePosition(page: string, query: string): string | undefined {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(page)) return undefined;
  const [version, position, digest, ...extra] = Buffer.from(page, "base64url").toString("utf8").split(".");
  if (version !== TOKEN_VERSION || extra.length > 0 || position === undefined || digest !== queryDigest(query)) return undefined;
  return position;
}
