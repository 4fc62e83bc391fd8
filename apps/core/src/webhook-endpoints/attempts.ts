import type { Db, Filter } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import { keysetIdRange, type CreatedRange } from "../storage/keyset-list.js";
import { WEBHOOK_ATTEMPTS_COLLECTION, type AttemptDocument } from "../webhook-deliveries/model.js";

export interface AttemptQuery {
  limit: number;
  startingAfter?: string;
  endingBefore?: string;
  event?: string;
  status?: AttemptDocument["status"];
  /** Bounds on the time the attempt's id begins with (Unix seconds): a range of the same indexes. */
  created?: CreatedRange;
}

/**
 * Reads of the attempts delivery records (webhook-deliveries/attempt.ts): one endpoint's, newest first, by keyset
 * on the attempt id (ids begin with the attempt's time: when it was due), backed by delivery's `(endpoint, _id desc)`
 * index and its `event` and `status` variants; `created` bounds are a range of the same ids.
 */
export class AttemptStore {
  private readonly attempts;

  constructor(db: Db) {
    this.attempts = db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION);
  }

  async list(tenant: Tenant, endpoint: string, query: AttemptQuery, budget: Budget = UNBOUNDED): Promise<{ items: AttemptDocument[]; hasMore: boolean }> {
    const filter: Filter<AttemptDocument> = { endpoint, account: tenant.account, livemode: tenant.livemode };
    if (query.event !== undefined) filter.event = query.event;
    if (query.status !== undefined) filter.status = query.status;
    const backwards = query.endingBefore !== undefined;
    const ids = keysetIdRange("wa", query, query.created);
    if (ids) filter._id = ids;
    const found = await this.attempts.find(filter, { sort: { _id: backwards ? 1 : -1 }, limit: query.limit + 1, ...budget.db() }).toArray();
    const hasMore = found.length > query.limit;
    const page = found.slice(0, query.limit);
    return { items: backwards ? page.reverse() : page, hasMore };
  }
}
