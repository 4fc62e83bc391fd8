/** Page size of every list (resources, accounts): 1 to LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT when not given. */
export const LIST_LIMIT_DEFAULT = 20;
export const LIST_LIMIT_MAX = 100;

/** Page size of a search (Stripe's default): 1 to LIST_LIMIT_MAX, SEARCH_LIMIT_DEFAULT when not given. */
export const SEARCH_LIMIT_DEFAULT = 10;

/** The words a page size outside the rule is refused with (`limit_invalid`, param `limit`), from the gateway and core alike. */
export const PAGE_SIZE_REFUSAL = `Invalid limit: must be an integer from 1 to ${LIST_LIMIT_MAX}.`;

/**
 * The page size of every list and search, the gateway's and core's one rule: the size asked when it is a whole
 * number from 1 to LIST_LIMIT_MAX, `fallback` when none was asked; anything else is thrown as `refuse(PAGE_SIZE_REFUSAL)`,
 * so each app refuses it in its own error type.
 */
export function pageSize(asked: number | undefined, refuse: (message: string) => Error, fallback: number = LIST_LIMIT_DEFAULT): number {
  if (asked === undefined) return fallback;
  if (!Number.isSafeInteger(asked) || asked < 1 || asked > LIST_LIMIT_MAX) throw refuse(PAGE_SIZE_REFUSAL);
  return asked;
}

/**
 * The limits of the one resource filter (CONTRACT.md section 3, "The filter model") where it appears:
 * ids and metadata keys a list, a bulk job and a search accept (search takes no ids; a list one key).
 */
export const RESOURCE_FILTER_LIMITS = {
  list: { ids: 100, metadataKeys: 1 },
  job: { ids: 1_000, metadataKeys: 5 },
  search: { ids: 0, metadataKeys: 5 },
} as const;

/** Most clauses of one search query. */
export const SEARCH_CLAUSES_MAX = 10;
