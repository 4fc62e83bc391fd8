import type { RMSResponse } from "./response.js";

/** A list page: the list envelope. */
export interface ListPage<Item = unknown> {
  readonly object: "list";
  readonly has_more: boolean;
  readonly data: readonly Item[];
}

/** A search page: Stripe's search envelope. */
export interface SearchPage<Item = unknown> {
  readonly object: "search_result";
  readonly has_more: boolean;
  readonly next_page: string | null;
  readonly data: readonly Item[];
}

type ItemOf<Page> = Page extends { data: readonly (infer Item)[] } ? Item : never;

/**
 * A list call: awaited, one page (the list envelope, with `lastResponse`); iterated with `for await`, every item of
 * every page, the filters kept on each (`starting_after` is the last id of the page before; with `ending_before`
 * the walk goes the other way, from each page's first id).
 */
export interface ListCall<Page> extends PromiseLike<RMSResponse<Page>>, AsyncIterable<ItemOf<Page>> {
  catch<T = never>(onRejected?: ((reason: unknown) => T | PromiseLike<T>) | null): Promise<RMSResponse<Page> | T>;
  finally(onFinally?: (() => void) | null): Promise<RMSResponse<Page>>;
}

/** A search call: awaited, one page; iterated, every match, page after page by `next_page` (a page may be empty while more follow). */
export type SearchCall<Page> = ListCall<Page>;

type Params = Record<string, unknown> | undefined;
type Fetch<Page> = (params: Params) => Promise<RMSResponse<Page>>;

/** The cursor parameters of the page after `page`, or undefined at the end. */
type Next<Page> = (page: Page, params: Params) => Params | undefined;

class PagedCall<Page extends { data: readonly unknown[] }> implements ListCall<Page> {
  private first: Promise<RMSResponse<Page>> | undefined;

  constructor(
    private readonly fetchPage: Fetch<Page>,
    private readonly params: Params,
    private readonly next: Next<Page>,
  ) {}

  /** The first page, asked for once, when first awaited or iterated. */
  private firstPage(): Promise<RMSResponse<Page>> {
    this.first ??= this.fetchPage(this.params);
    return this.first;
  }

  // biome-ignore lint/suspicious/noThenProperty: a call is awaitable for its first page, as stripe-node's lists are.
  then<A = RMSResponse<Page>, B = never>(
    onFulfilled?: ((page: RMSResponse<Page>) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ) {
    return this.firstPage().then(onFulfilled, onRejected);
  }

  catch<T = never>(onRejected?: ((reason: unknown) => T | PromiseLike<T>) | null) {
    return this.firstPage().catch(onRejected);
  }

  finally(onFinally?: (() => void) | null) {
    return this.firstPage().finally(onFinally);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ItemOf<Page>> {
    let params = this.params;
    let page: Page = await this.firstPage();
    for (;;) {
      for (const item of page.data) yield item as ItemOf<Page>;
      const following = this.next(page, params);
      if (following === undefined) return;
      params = following;
      page = await this.fetchPage(params);
    }
  }
}

const idOf = (item: unknown): string | undefined => {
  const id = (item as { id?: unknown } | null)?.id;
  return typeof id === "string" ? id : undefined;
};

/** The list walk: by `starting_after` (or, when the call gave `ending_before`, backwards by it). */
function nextListPage(page: ListPage, params: Params): Params | undefined {
  if (!page.has_more || page.data.length === 0) return undefined;
  const backwards = params?.["ending_before"] !== undefined;
  const cursor = backwards ? idOf(page.data[0]) : idOf(page.data.at(-1));
  // A list of items without ids (a job's item errors) pages by their index: its cursor is the item's `index`.
  const fallback = (page.data[backwards ? 0 : page.data.length - 1] as { index?: unknown }).index;
  const value = cursor ?? fallback;
  if (value === undefined) return undefined;
  const { starting_after: _after, ending_before: _before, ...filters } = params ?? {};
  return { ...filters, [backwards ? "ending_before" : "starting_after"]: value };
}

/** The search walk: by `next_page`, until the answer says there is no more. */
function nextSearchPage(page: SearchPage, params: Params): Params | undefined {
  if (!page.has_more || !page.next_page) return undefined;
  return { ...params, page: page.next_page };
}

export function listCall<Page extends ListPage>(fetchPage: Fetch<Page>, params: Params): ListCall<Page> {
  return new PagedCall<Page>(fetchPage, params, nextListPage as Next<Page>);
}

export function searchCall<Page extends SearchPage>(fetchPage: Fetch<Page>, params: Params): SearchCall<Page> {
  return new PagedCall<Page>(fetchPage, params, nextSearchPage as Next<Page>);
}
