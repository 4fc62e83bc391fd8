import type { LiveStream, StreamOptions } from "@rms/sdk";

/** Where a shared stream is: nobody follows it (or the tab is hidden), opening, open, or it could not open. */
export type StreamState = "off" | "opening" | "open" | "failed";

/** One follower of a shared stream: told of its items, of each opening (what came before it) and of its state. */
export interface StreamListener<Item> {
  item(item: Item): void;
  opened(): void;
  state(state: StreamState): void;
}

export interface SharedStream<Item> {
  /** Follows the stream (opening it for the first follower); the answer stops following (closing it after the last). */
  subscribe(listener: StreamListener<Item>): () => void;
}

/**
 * One stream a tab shares between every part that follows it, open while someone follows it and the tab is visible:
 * a key holds at most ten streams (docs/streams.md), so a tab holds one per kind whatever its pages show, and a hidden
 * tab none (it opens again when shown, and the opening refreshes every follower). Followers filter the items.
 */
export function sharedStream<Item>(open: (options: StreamOptions) => LiveStream<Item>, visibility: VisibilitySource = documentVisibility): SharedStream<Item> {
  const listeners = new Set<StreamListener<Item>>();
  let stream: LiveStream<Item> | null = null;
  let state: StreamState = "off";
  const tell = (next: StreamState) => {
    state = next;
    for (const listener of [...listeners]) listener.state(next);
  };
  const start = () => {
    if (stream !== null || listeners.size === 0 || visibility.hidden()) return;
    const current = open({
      onOpen: () => {
        if (stream !== current) return;
        tell("open");
        for (const listener of [...listeners]) listener.opened();
      },
    });
    stream = current;
    tell("opening");
    void (async () => {
      try {
        for await (const item of current) for (const listener of [...listeners]) listener.item(item);
      } catch {
        // It could not open, or the API ended it for good (a revoked key): the followers poll slowly meanwhile, and
        // the next follower, or the tab shown again, tries again.
        if (stream === current) {
          stream = null;
          tell("failed");
        }
      }
    })();
  };
  const stop = (next: StreamState) => {
    const current = stream;
    stream = null;
    current?.close();
    tell(next);
  };
  visibility.onChange(() => (visibility.hidden() ? stop("off") : start()));
  return {
    subscribe(listener) {
      listeners.add(listener);
      listener.state(state);
      start();
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0) stop("off");
      };
    },
  };
}

/** Whether the tab is hidden, and when that changes. */
export interface VisibilitySource {
  hidden(): boolean;
  onChange(listener: () => void): void;
}

const documentVisibility: VisibilitySource = {
  hidden: () => typeof document !== "undefined" && document.hidden,
  onChange: (listener) => {
    if (typeof document !== "undefined") document.addEventListener("visibilitychange", listener);
  },
};
