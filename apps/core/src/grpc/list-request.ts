import { LIST_LIMIT_DEFAULT, pageSize } from "@rms/proto";
import { errors } from "../errors.js";
import { isId, type IdPrefix } from "../ids.js";

/** The paging fields every list request of rms.v1 carries. */
export interface PagingRequest {
  limit: number;
  startingAfter: string;
  endingBefore: string;
}

/** A checked page request: the limit and at most one cursor (storage/keyset-list.ts). */
export interface Page {
  limit: number;
  startingAfter?: string;
  endingBefore?: string;
}

/**
 * A list or search request's page size by the API's one rule (@rms/proto's `pageSize`): 0 is how the wire says
 * "not given" (a protobuf number is never absent), so it is `fallback`.
 */
export function limitOf(limit: number, fallback: number = LIST_LIMIT_DEFAULT): number {
  return pageSize(limit === 0 ? undefined : limit, (message) => errors.invalid("limit_invalid", message, "limit"), fallback);
}

/**
 * Checks a list request's paging fields: limit 0 means the default; a cursor must be an id of
 * the listed kind (`noun` names it in the message); at most one cursor.
 */
export function pageOf(request: PagingRequest, prefix: IdPrefix, noun: string): Page {
  const limit = limitOf(request.limit);
  const cursor = (value: string, param: string): string | undefined => {
    if (value === "") return undefined;
    if (!isId(prefix, value)) throw errors.invalid("parameter_invalid", `Invalid ${param}: '${value.slice(0, 64)}' is not a ${noun} id.`, param);
    return value;
  };
  const startingAfter = cursor(request.startingAfter, "starting_after");
  const endingBefore = cursor(request.endingBefore, "ending_before");
  if (startingAfter && endingBefore) {
    throw errors.invalid("parameter_invalid", "You may only specify one of starting_after and ending_before.", "ending_before");
  }
  return { limit, ...(startingAfter ? { startingAfter } : {}), ...(endingBefore ? { endingBefore } : {}) };
}
