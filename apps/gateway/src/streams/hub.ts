/**
 * One item of a stream as the gateway fans it out: its tenant (`<account>/<live|test>`), its place in the tenant's
 * stream (positions 1, 2, 3, ... in commit order: docs/streams.md), and its SSE frame, made once for every subscriber.
 */
export interface StreamItem<V = unknown> {
  readonly tenant: string;
  readonly position: number;
  /** What the subscribers' filters read (an event's type and object, a request log's fields). */
  readonly value: V;
  /** The SSE frame (`id`, `event`, `data`), rendered on first use and kept. */
  frame(): string;
}

/** A subscriber as the hub sees it. */
export interface HubListener<V> {
  /** Items of its tenant, in the feed's order (each tenant's positions ascending). Must not block. */
  onItems(items: readonly StreamItem<V>[]): void;
  /** The feed started afresh and may have missed items: catch up by position. */
  onReset(): void;
}

/**
 * The in-memory fan-out of one feed (docs/streams.md, "Fan-out"): subscribers by tenant; each item published goes
 * to the subscribers of its tenant, nowhere else, and an item of a tenant without subscribers is dropped at once.
 */
export class StreamHub<V = unknown> {
  private readonly byTenant = new Map<string, Set<HubListener<V>>>();
  private count = 0;

  /** Adds a subscriber of `tenant`; the answer removes it. */
  subscribe(tenant: string, listener: HubListener<V>): () => void {
    const set = this.byTenant.get(tenant) ?? new Set<HubListener<V>>();
    this.byTenant.set(tenant, set);
    set.add(listener);
    this.count++;
    return () => {
      if (!set.delete(listener)) return;
      this.count--;
      if (set.size === 0) this.byTenant.delete(tenant);
    };
  }

  /** Subscribers now. */
  get size(): number {
    return this.count;
  }

  /** Hands each tenant's items to its subscribers, in order. */
  publish(items: readonly StreamItem<V>[]): void {
    if (this.count === 0 || items.length === 0) return;
    let run: StreamItem<V>[] = [];
    for (const item of items) {
      if (run.length > 0 && run[0]!.tenant !== item.tenant) {
        this.deliver(run);
        run = [];
      }
      if (this.byTenant.has(item.tenant)) run.push(item);
    }
    if (run.length > 0) this.deliver(run);
  }

  /** Every subscriber catches up by position (its feed may have missed items). */
  reset(): void {
    for (const set of this.byTenant.values()) for (const listener of [...set]) listener.onReset();
  }

  private deliver(items: readonly StreamItem<V>[]): void {
    const set = this.byTenant.get(items[0]!.tenant);
    if (set) for (const listener of [...set]) listener.onItems(items);
  }
}

/** An item whose frame is rendered once, on first use. */
export function streamItem<V>(tenant: string, position: number, value: V, render: () => string): StreamItem<V> {
  let frame: string | undefined;
  return { tenant, position, value, frame: () => (frame ??= render()) };
}
