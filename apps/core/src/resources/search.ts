import { searchPagePosition, searchPageToken } from "@rms/proto";
import type { Collection, Document, Filter } from "mongodb";
import type { Tenant } from "../caller.js";
import { errors } from "../errors.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import { isId } from "../ids.js";
import { ANSWER_PROJECTION, type AnsweredResource } from "./model.js";
import { pageFrom } from "../storage/keyset-list.js";
import type { ResourceFilter } from "./filter.js";
import { findFilter, resourceQuery } from "./filter-query.js";
import type { ResourceDocument } from "./model.js";

/**
 * One search page (CONTRACT.md section 3, "Search", in ../shared/docs/), newest first, with bounded work:
 * the filter's query (filter-query.ts) names the index that drives the walk and what it leaves to check.
 * When it leaves nothing, the page is that index range read up to `limit + 1`, like a list page. Otherwise
 * the walk reads at most SEARCH_EXAMINED_MAX documents of the range and checks the rest on them: the page
 * holds what matched (up to `limit`), and when the window filled before the page did, the next page starts
 * right after the window's last document (a short or empty page with `has_more`). Either way the next page
 * is `_id <` a position, so walking every page yields every match exactly once, and a resource created or
 * changed before the request is read as it is now (reads go to the primary).
 */

/** Most documents one search request examines. */
export const SEARCH_EXAMINED_MAX = 1_000;

export interface SearchPage {
  items: AnsweredResource[];
  /** Where the next page starts (`_id` below it), or null at the end. */
  next: string | null;
}

export async function searchPage(
  collection: Collection<ResourceDocument>,
  tenant: Tenant,
  filter: ResourceFilter,
  page: { limit: number; after?: string | undefined },
  budget: Budget = UNBOUNDED,
): Promise<SearchPage> {
  const query = resourceQuery(tenant, filter, { lt: page.after });
  if (query.rest.length === 0) {
    const found = (await collection
      .find(findFilter(query), { sort: { _id: -1 }, limit: page.limit + 1, hint: query.index, projection: ANSWER_PROJECTION, ...budget.db() })
      .toArray()) as AnsweredResource[];
    const { items, hasMore } = pageFrom(found, page.limit, false);
    return { items, next: hasMore ? items.at(-1)!._id : null };
  }
  // The index range up to the window's end (pushed down as one index walk with a limit), then on that window:
  // the matches and the window's last document (the driver's index holds no tombstones, so the window is of live documents).
  const pipeline: Document[] = [
    { $match: query.driver },
    { $sort: { _id: -1 } },
    { $limit: SEARCH_EXAMINED_MAX },
    {
      $facet: {
        page: [{ $match: { $and: query.rest } as Filter<ResourceDocument> }, { $limit: page.limit + 1 }, { $project: ANSWER_PROJECTION }],
        end: [{ $skip: SEARCH_EXAMINED_MAX - 1 }, { $project: { _id: 1 } }],
      },
    },
  ];
  const [result] = await collection.aggregate<{ page: AnsweredResource[]; end: { _id: string }[] }>(pipeline, { hint: query.index, ...budget.db() }).toArray();
  const { items, hasMore } = pageFrom(result?.page ?? [], page.limit, false);
  if (hasMore) return { items, next: items.at(-1)!._id };
  return { items, next: result?.end[0]?._id ?? null };
}

/** The opaque `next_page`: base64url of `1.<position id>.<digest of the query>` (@rms/proto, wire/search-page.ts). */
export function pageToken(next: string, query: string): string {
  return searchPageToken(next, query);
}

/** The position a `page` token continues from (none for ""), or 400 `parameter_invalid` when it is not one this query's answers gave. */
export function pagePosition(page: string, query: string): string | undefined {
  if (page === "") return undefined;
  const position = searchPagePosition(page, query);
  if (position === undefined || !isId("res", position)) {
    throw errors.invalid("parameter_invalid", "Invalid page: pass the next_page of the previous answer to the same query.", "page");
  }
  return position;
}
