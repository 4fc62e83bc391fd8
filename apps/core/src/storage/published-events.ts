import type { ClientSession } from "mongodb";
import type { Relayed } from "./relay.js";

/** What is left to do once the transaction that wrote the events has committed (wake-ups: never inside it). */
export type AfterCommit = () => Promise<void>;

/**
 * Events written in the transaction of the changes that make them, instead of an outbox (docs/events.md, "Events in
 * the same batch"): prepared as the relay prepares what it copies (the webhook fan-out) and inserted into `events`,
 * both with `session`, so a change and its event commit together or not at all, and no relay reads, copies or pulls
 * them afterwards. Answers what to do after the commit.
 */
export type PublishInTransaction = (events: readonly Relayed[], session: ClientSession) => Promise<AfterCommit>;
