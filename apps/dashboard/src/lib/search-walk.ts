/** One answer of `GET /v1/resources/search`. */
export interface SearchAnswer<Row> {
  readonly data: Row[];
  readonly has_more: boolean;
  readonly next_page?: string | null;
}

/** How many search requests one page view may make before it shows what it has (each examines at most 1,000 resources). */
export const SEARCH_WALK_MAX = 20;

/**
 * A page of search results. One search request examines at most 1,000 resources, so an answer may hold no match
 * while `has_more` is true (CONTRACT.md section 3, Search): over a large account a selective query would show empty
 * page after empty page, each behind a click. This follows `next_page` until an answer holds a match, the search
 * ends, or `max` requests were made; `requests` says how many.
 */
export async function searchPage<Row>(
  fetchPage: (page: string | undefined) => Promise<SearchAnswer<Row>>,
  start: string | undefined,
  max: number = SEARCH_WALK_MAX,
): Promise<SearchAnswer<Row> & { readonly requests: number }> {
  let page = start;
  for (let requests = 1; ; requests++) {
    const answer = await fetchPage(page);
    if (answer.data.length > 0 || !answer.has_more || !answer.next_page || requests >= max) return { ...answer, requests };
    page = answer.next_page;
  }
}

/** What an empty page of search results says: no match at all, or none yet in the part searched. */
export function emptySearchText(page: { has_more: boolean; requests?: number } | undefined): string {
  if (!page?.has_more) return "No match.";
  const requests = page.requests ?? 1;
  return (
    `No match yet in the part searched so far (${requests.toLocaleString("en-US")} request${requests === 1 ? "" : "s"}, at most ` +
    `${(requests * 1000).toLocaleString("en-US")} resources); More results searches on.`
  );
}
