import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { create, fromBinary, toBinary, type DescMethodClientStreaming, type DescMethodUnary, type MessageInitShape } from "@bufbuild/protobuf";
import {
  ANSWER_HEADERS_METADATA,
  catalogueError,
  httpStatusOf,
  idempotencyScopeId,
  ERROR_CATALOGUE,
  isDuplicateKeyError,
  REPLAY_METADATA,
  REQUEST_FINGERPRINT_METADATA,
  RpcError,
  type AnyErrorCode,
  type CallContext,
  type IdempotentReplayTrailer,
} from "@rms/proto";
import { Binary, MongoError, type ClientSession } from "mongodb";
import type { Logger } from "pino";
import { inTransaction, type Budget, type TransactionBudget } from "../budget.js";
import type { RequestInfo, Tenant } from "../caller.js";
import { errors, isUnansweredWrite } from "../errors.js";
import type { Faults } from "../faults.js";
import { metadataValue } from "./call-info.js";
import {
  LOCK_MARGIN_MS,
  LOCK_TIMEOUT_MS,
  type CompletedRecord,
  type BeginResult,
  type IdempotencyLease,
  type IdempotencyRecords,
  type RecordedAnswer,
} from "../storage/idempotency-records.js";
import { decryptSecret, encryptSecret, type Keyring } from "../webhooks/secret.js";

/**
 * Exactly once under an Idempotency-Key, for every declared RPC (define-rpc.ts), in one place
 * (docs/idempotency-and-limits.md, "One home"). A call that carries the key (the gateway sends it with every POST)
 * runs as
 *
 *   tenant -> [presented key | lock the key's record] -> parse -> load/write -> reply -> record the answer
 *
 * and a repeat of it (same key and scope, same fingerprint) gets the recorded answer back, marked with the
 * `rms-replay` trailer (the first request's id and the headers the gateway gave with it), which the gateway sends
 * byte for byte: the reply message as first answered, or the error core refused it with. Another request under
 * the key is `idempotency_key_reused`, the same one still executing `idempotency_key_in_use`. What is recorded:
 * every answer of an executed call but a 5xx (outcome unknown: the lock is released and a retry executes again) and
 * a 401 (the key was refused: nothing executed). One record per key for every operation, taken by one atomic
 * insert, so two different operations sent under one key at the same instant cannot both execute.
 *
 * A declaration chooses by its `idempotency` option: `"recorded"` (the default), `"sealed"` (the answer holds a
 * secret: recorded encrypted under `RMS_SECRET_KEY`, the record's `_id` as associated data) or `"none"`.
 */
export type IdempotencyPolicy = "recorded" | "sealed" | "none";

/** What running calls under a key needs: the records, the keyring sealed answers use, a logger for lost records. */
export interface KeyedCalls {
  readonly records: IdempotencyRecords;
  readonly keyring: Keyring | null;
  readonly logger?: Logger;
  /** Test-only crash points between the protocol's writes (faults.ts). */
  readonly faults?: Faults;
}

export const IN_USE_MESSAGE =
  "There is currently another in-progress request using this Idempotency-Key (that probably means you submitted twice, and the other request is still " +
  "going through). Please try again later.";

/** The presented-key check as define-rpc.ts runs it. */
type KeyCheck = (context: CallContext, tenant: Tenant, options?: { timeoutMS?: number }) => Promise<void>;

/** A method kept under a key: a unary one, or a client-streaming upload (one answer either way). */
export type KeyedMethod = DescMethodUnary | DescMethodClientStreaming;

interface KeyedBase {
  readonly keyed: KeyedCalls;
  readonly policy: Exclude<IdempotencyPolicy, "none">;
  readonly method: KeyedMethod;
  readonly context: CallContext;
  readonly tenant: Tenant;
  readonly budget: Budget;
  readonly info: RequestInfo & { idempotencyKey: string };
  readonly checkKey: KeyCheck;
}

export interface KeyedCall<Res> extends KeyedBase {
  readonly request: unknown;
  /** The declaration's `atomic`: the call's writes and the record of its answer commit in one transaction. */
  readonly atomic?: boolean;
  /** parse -> load/write -> reply, once the key's record is held; `within`: the budget its commands run in. */
  readonly execute: (within?: Budget) => Promise<Res>;
}

/** What the key protocol needs of an upload's stream (grpc/upload-stream.ts). */
export interface KeyedStream {
  /** The stream's first message (its `start`), as received: core's own fingerprint when the caller gives none. */
  readonly first: unknown;
  /** The digest of the bytes and the end message once the stream ended (the rest of the fingerprint); null before. */
  content(): string | null;
  /** Reads the rest of the stream, keeping nothing, and answers its content digest (a repeat's bytes). */
  drain(): Promise<string>;
  /** Told as the bytes keep coming (and at their end), so the lock lasts while they do. */
  onProgress: (() => Promise<void>) | null;
}

export interface KeyedUpload<Res> extends KeyedBase {
  readonly stream: KeyedStream;
  /** The declaration's `atomic`: the upload's document and the record of its answer commit in one transaction. */
  readonly atomic?: boolean;
  /** parse -> write (reading the bytes) -> reply, once the key's record is held; `within`: the budget its commands run in. */
  readonly execute: (within: Budget) => Promise<Res>;
}

/**
 * How long an upload's lock holds past the last bytes that arrived: it is renewed while they flow (a third of it
 * apart), so a core that dies mid-upload blocks a retry of the key for at most this long, not for the upload's
 * whole deadline (a day). The gateway cuts an upload that sends nothing for 30 s.
 */
export const UPLOAD_LOCK_MS = 30_000;

/** A recorded upload answer: with the content digest of its stream when the bytes had ended when it was decided. */
type UploadAnswer = RecordedAnswer & { content?: string };

/** Runs one call under its Idempotency-Key: executes it once, or answers what the key's record holds. */
export function runUnderKey<Res>(call: KeyedCall<Res>): Promise<Res> {
  const fingerprint = metadataValue(call.context, REQUEST_FINGERPRINT_METADATA) ?? ownFingerprint(call.method, call.context.method, call.request);
  return underKey(call, fingerprint, {
    oneCommit: call.atomic === true,
    rerunnable: true,
    execute: (within) => call.execute(within),
    content: () => null,
    replay: async (record, scopeId) => replay(call, record, scopeId),
  });
}

/**
 * Runs a client-streaming upload under its Idempotency-Key, by the same protocol: the lock is taken when the
 * stream starts (so a repeat sent meanwhile is 409 in flight), on the fingerprint of the route and the start's
 * fields; the rest of the fingerprint (the bytes' sha256 and the end's fields) is known only at the stream's end,
 * and is recorded with the answer. A repeat whose start matches a completed record sends its bytes again: hashed
 * and kept nowhere, then the first answer (the same bytes) or `idempotency_key_reused` (other bytes). An answer
 * decided before the first stream ended (a refusal of its start, a 413) is replayed without reading the repeat's.
 */
export function runUploadUnderKey<Res>(call: KeyedUpload<Res>): Promise<Res> {
  const fingerprint = metadataValue(call.context, REQUEST_FINGERPRINT_METADATA) ?? ownFingerprint(call.method, call.context.method, call.stream.first);
  const { stream, keyed, budget } = call;
  return underKey(call, fingerprint, {
    lockMs: UPLOAD_LOCK_MS,
    oneCommit: call.atomic === true,
    // Its bytes are read once.
    rerunnable: false,
    onLease: (lease) => {
      stream.onProgress = async () => {
        await lease.extend(UPLOAD_LOCK_MS, budget).catch((cause: unknown) => lost(keyed, call.info.requestId ?? "", cause));
      };
    },
    execute: (within) => call.execute(within),
    content: () => stream.content(),
    replay: async (record, scopeId) => {
      const recorded = (record.answer as UploadAnswer | undefined)?.content;
      if (recorded !== undefined && (await stream.drain()) !== recorded) throw errors.of("idempotency_key_reused");
      return replay(call, record, scopeId);
    },
  });
}

interface KeyedSteps<Res> {
  /** How long the lock holds if never completed nor released (default: the caller's deadline plus a margin). */
  readonly lockMs?: number;
  /** The call's writes and the record of its answer commit in one transaction (inOneCommit). */
  readonly oneCommit: boolean;
  /** Whether `execute` may run again after its transaction met a concurrent call's writes (not a stream's). */
  readonly rerunnable: boolean;
  /** Told of the lock once taken (an upload renews it while its bytes flow). */
  readonly onLease?: (lease: IdempotencyLease) => void;
  /** parse -> write -> reply; `within`: the budget its commands run in (the transaction's under `oneCommit`). */
  readonly execute: (within: Budget) => Promise<Res>;
  /** The part of the fingerprint known only once the call ran (an upload's bytes), recorded with its answer. */
  readonly content: () => string | null;
  readonly replay: (record: CompletedRecord, scopeId: string) => Promise<Res>;
}

/** A lock taken, as the protocol uses it: record the answer (false: another holder took the lock over), or give the key back. */
interface Held {
  complete(answer: RecordedAnswer): Promise<boolean>;
  release(): Promise<void>;
}

async function underKey<Res>(call: KeyedBase, fingerprint: string, steps: KeyedSteps<Res>): Promise<Res> {
  const { keyed, context, tenant, budget, info } = call;
  const requestId = info.requestId ?? "";
  const scope = { id: idempotencyScopeId(tenant.account, tenant.livemode, info.idempotencyKey), account: tenant.account, livemode: tenant.livemode };
  // The lock lasts as long as the caller waits for this call and a margin (core starts no write past the deadline,
  // and a write sent just before it ends within the driver's timeout); 30 s for a caller that gives no deadline.
  const lockMs = steps.lockMs ?? (Number.isFinite(context.deadline) ? Math.max(0, context.deadline - Date.now()) + LOCK_MARGIN_MS : LOCK_TIMEOUT_MS);
  if (call.policy === "sealed" && !keyed.keyring) {
    // An answer holding a secret is kept only sealed; without RMS_SECRET_KEY a repeat could not get it back and
    // would execute again (a second key, a second endpoint): refused before anything runs.
    keyed.logger?.error({ request_id: requestId }, "RMS_SECRET_KEY is not configured: an answer holding a secret cannot be kept under its Idempotency-Key");
    throw errors.of("internal_error");
  }
  const headers = metadataValue(context, ANSWER_HEADERS_METADATA) ?? "[]";
  const withContent = (answer: RecordedAnswer): UploadAnswer => {
    const content = steps.content();
    return content === null ? answer : { ...answer, content };
  };
  const taken = await acquire(call, keyed.records.begin(scope, fingerprint, requestId, lockMs, budget), (lease) => lease.release());
  if ("record" in taken) return steps.replay(taken.record, scope.id);
  const { lock: lease } = taken;
  steps.onLease?.(lease);
  keyed.faults?.afterWrite("keyed.locked");
  if (steps.oneCommit) {
    // A write conflict of the call's own writes with a concurrent call's (two creates taking one free place of a
    // limit) aborts the transaction before anything commits: under the same lock, the write runs again in a new one,
    // after a jittered pause, while the call's budget lasts (a stream's bytes are read once: 503, nothing done).
    for (let attempt = 1; ; attempt++) {
      const session = keyed.records.client.startSession();
      session.startTransaction();
      const within = inTransaction(budget, session);
      const held: Held = { complete: (answer) => lease.completeWithin(answer, requestId, within), release: () => lease.release() };
      try {
        return await inOneCommit(call, session, within, held, (w) => steps.execute(w), withContent, headers, scope.id);
      } catch (error) {
        if (!(error instanceof AttemptConflict)) throw error;
        const pause = conflictPause(attempt);
        if (!steps.rerunnable || attempt >= CONFLICT_ATTEMPTS || !hasTimeFor(budget, pause)) {
          await lease.release().catch((cause: unknown) => lost(keyed, requestId, cause));
          throw errors.unavailable();
        }
        await sleep(pause);
      }
    }
  }
  let reply: Res;
  try {
    reply = await steps.execute(budget);
  } catch (error) {
    const refusal = recordable(error);
    // Recorded before the answer (below); released otherwise: a retry must find the key free once told to retry.
    if (refusal) await record(lease.complete(withContent({ error: refusal, headers }), requestId, budget), keyed, requestId);
    else await lease.release().catch((cause: unknown) => lost(keyed, requestId, cause));
    throw error;
  }
  keyed.faults?.afterWrite("keyed.executed");
  // The answer is recorded (majority-acknowledged) before the reply leaves: a client that has its answer has its
  // memo too, so a crash of anything after the answer cannot make a retry run the request again (the durability
  // e2e test kills mongod right after the last acknowledgement; recording beside the reply lost that record). If
  // recording fails the caller still has its answer; the lock ends and a retry executes again.
  await record(lease.complete(withContent(answerOf(call, reply, headers, scope.id)), requestId, budget), keyed, requestId);
  keyed.faults?.afterWrite("keyed.recorded");
  return reply;
}

/**
 * The presented key checked beside the lock's taking: the lock (`held`) or the recorded answer of the same request;
 * a refused key drops a lock it took and executes nothing; another request's record is `idempotency_key_reused`, the
 * same request still executing `idempotency_key_in_use`.
 */
async function acquire(
  call: KeyedBase,
  begin: Promise<BeginResult>,
  drop: (lease: IdempotencyLease) => Promise<void>,
): Promise<{ readonly lock: IdempotencyLease } | { readonly record: CompletedRecord }> {
  const { keyed, context, tenant, budget, info } = call;
  const [key, begun] = await Promise.allSettled([call.checkKey(context, tenant, budget.db()), begin]);
  if (key.status === "rejected") {
    // A refused key executes nothing and holds nothing.
    if (begun.status === "fulfilled" && begun.value.kind === "acquired")
      await drop(begun.value.lease).catch((cause: unknown) => lost(keyed, info.requestId ?? "", cause));
    throw key.reason;
  }
  if (begun.status === "rejected") throw begun.reason;
  const outcome = begun.value;
  switch (outcome.kind) {
    case "reused":
      throw errors.of("idempotency_key_reused");
    case "inFlight":
      throw errors.conflict("idempotency_key_in_use", IN_USE_MESSAGE);
    case "replay":
      return { record: outcome.record };
  }
  return { lock: outcome.lease };
}

/** The reply as recorded: its protobuf bytes, sealed when it holds a secret (a sealed call never runs without a keyring). */
function answerOf<Res>(call: KeyedBase, reply: Res, headers: string, scopeId: string): RecordedAnswer {
  const { method, keyed } = call;
  const bytes = toBinary(method.output, create(method.output, reply as MessageInitShape<typeof method.output>));
  if (call.policy !== "sealed") return { reply: new Binary(bytes), headers };
  if (!keyed.keyring) throw errors.of("internal_error");
  return { reply: encryptSecret(Buffer.from(bytes).toString("base64"), keyed.keyring, scopeId), headers };
}

/**
 * A call's writes and the record of its answer (or of a refusal) in one transaction, so one commit (majority,
 * journaled) makes both durable before the answer leaves, or neither: a crash at any point leaves either the answer
 * with its effect, or the lock alone and no effect (the retry executes once the lock ends). The record is completed only while this holder still
 * owns the lock, and from then to the commit no takeover can remove it (a write to a document a transaction changed
 * waits for that transaction). docs/idempotency-and-limits.md, "One commit".
 */
async function inOneCommit<Res>(
  call: KeyedBase,
  session: ClientSession,
  within: TransactionBudget,
  held: Held,
  execute: (within: Budget) => Promise<Res>,
  withContent: (answer: RecordedAnswer) => RecordedAnswer,
  headers: string,
  scopeId: string,
): Promise<Res> {
  const { keyed, budget } = call;
  const requestId = call.info.requestId ?? "";
  let committed = false;
  let commitSent = false;
  try {
    let reply: Res | undefined;
    let refused: unknown = null;
    let answer: RecordedAnswer;
    try {
      reply = await execute(within);
      answer = withContent(answerOf(call, reply, headers, scopeId));
    } catch (error) {
      const refusal = recordable(error);
      if (!refusal) throw error;
      refused = error;
      answer = withContent({ error: refusal, headers });
    }
    keyed.faults?.afterWrite("keyed.executed");
    // Past the lock's end a takeover may have run: commit nothing, the key's new holder decides.
    if (!(await held.complete(answer))) throw errors.unavailable();
    keyed.faults?.afterWrite("keyed.recorded");
    // The commit is a write like any other: not started once the budget is spent (the transaction is aborted below).
    budget.beforeWrite();
    const { timeoutMS } = budget.db();
    commitSent = true;
    await commit(session, timeoutMS);
    committed = true;
    within.committed();
    if (refused) throw refused;
    return reply as Res;
  } catch (error) {
    if (!committed) {
      // A commit refused as transient (the transaction is gone: a new primary never had it) committed nothing.
      const notCommitted = !commitSent || isConflict(error);
      // Not after a commit was sent: its outcome is the server's (an abort would wait behind a commit without reply).
      if (!commitSent && session.inTransaction()) await session.abortTransaction().catch(() => undefined);
      if (notCommitted) await within.aborted();
      // A conflict with a write made since the transaction began (a concurrent call's, or the record taken over), a
      // duplicate key (which aborts a transaction), or an election in its course: nothing was done, and the caller
      // runs the write again under its lock or gives the key back.
      if (notCommitted && isConflict(error)) throw new AttemptConflict();
      // Nothing committed, or a commit whose outcome is unknown: the release removes a record still pending only.
      await held.release().catch((cause: unknown) => lost(keyed, requestId, cause));
    }
    throw error;
  } finally {
    // Not waited for: after a commit without reply it would wait as long.
    void session.endSession().catch(() => undefined);
  }
}

/**
 * How many times at most a call in one commit runs after its transaction met concurrent calls' writes. Calls that
 * contend for one document (a limit's count of an account) conflict all but one per round: n at once need up to n
 * rounds, so the bound is the call's budget, and this count only stops a call that has none (no deadline).
 */
export const CONFLICT_ATTEMPTS = 32;
/** The pause before the next attempt: full jitter up to 4 ms, doubling per attempt to at most 64 ms, so the losers spread out. */
export function conflictPause(attempt: number, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(64, 4 * 2 ** (attempt - 1)));
}

/** Whether the budget leaves time for a pause and another attempt (its commands run in what is left). */
function hasTimeFor(budget: Budget, pauseMs: number): boolean {
  try {
    const { timeoutMS } = budget.db();
    return timeoutMS === undefined || timeoutMS > pauseMs + MIN_ATTEMPT_MS;
  } catch {
    return false;
  }
}
/** Less time than this left after the pause: another attempt would not reach its commit. */
const MIN_ATTEMPT_MS = 50;

/** A transaction aborted by a conflict before its commit: nothing was done, the attempt may run again. */
class AttemptConflict extends Error {}

function isConflict(error: unknown): boolean {
  return error instanceof MongoError && (error.hasErrorLabel("TransientTransactionError") || isDuplicateKeyError(error));
}

/**
 * Commits the call's transaction; its outcome is unknown when its reply has not come by the budget's end (the driver
 * gives a commit no time limit of the call's).
 */
async function commit(session: ClientSession, timeoutMS: number | undefined): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    if (timeoutMS !== undefined) timer = setTimeout(() => reject(errors.outcomeUnknown()), timeoutMS);
  });
  try {
    await Promise.race([session.commitTransaction(), late]);
  } catch (error) {
    if (isUnansweredWrite(error) || (error instanceof MongoError && error.hasErrorLabel("UnknownTransactionCommitResult"))) throw errors.outcomeUnknown();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** A record's write, waited for before the answer; a failure is logged (the lock then ends by itself). */
function record(write: Promise<void>, keyed: KeyedCalls, requestId: string): Promise<void> {
  return write.catch((cause: unknown) => lost(keyed, requestId, cause));
}

/** The recorded answer again, marked as a replay (`rms-replay`): the reply message, or the error it was. */
function replay<Res>(call: KeyedBase, record: CompletedRecord, scopeId: string): Res {
  const { context, method, keyed } = call;
  const answer = record.answer;
  const trailer: IdempotentReplayTrailer = { requestId: record.request_id, headers: answer.headers };
  context.setTrailer?.(REPLAY_METADATA, JSON.stringify(trailer));
  if (answer.error) throw catalogueError(answer.error.code as AnyErrorCode, answer.error.message, answer.error.param || undefined);
  let bytes: Uint8Array;
  if (typeof answer.reply === "string") {
    // A sealed answer that does not open (another RMS_SECRET_KEY, altered bytes) cannot be replayed, and running the
    // request again could repeat its effect: internal_error.
    if (!keyed.keyring) throw errors.of("internal_error");
    try {
      bytes = Buffer.from(decryptSecret(answer.reply, keyed.keyring, scopeId), "base64");
    } catch {
      keyed.logger?.error({ request_id: call.info.requestId }, "a sealed idempotency record does not open");
      throw errors.of("internal_error");
    }
  } else {
    bytes = answer.reply ? answer.reply.buffer : new Uint8Array();
  }
  return fromBinary(method.output, bytes) as Res;
}

/**
 * The error to record for a call that failed while executing: an answer of the catalogue below 500 but a 401. A
 * 5xx (unavailable, deadline, outcome unknown, a bug) is not an answer to the request, and a 401 belongs to the key.
 */
function recordable(error: unknown): RecordedAnswer["error"] | null {
  if (!(error instanceof RpcError) || !Object.hasOwn(ERROR_CATALOGUE, error.code)) return null;
  const status = httpStatusOf(error.code as AnyErrorCode);
  if (status >= 500 || status === 401) return null;
  // Well-formed, as the error travels (a lone surrogate becomes U+FFFD), so its replay says the same words.
  return { code: error.code, message: error.message.toWellFormed(), param: error.param ?? "" };
}

/** A fingerprint for a caller that gives none (an operator's call): the method and the request's bytes. */
function ownFingerprint(method: KeyedMethod, path: string, request: unknown): string {
  return createHash("sha256")
    .update(path)
    .update(toBinary(method.input, create(method.input, request as MessageInitShape<typeof method.input>)))
    .digest("base64url");
}

function lost(keyed: KeyedCalls, requestId: string, cause: unknown): void {
  keyed.logger?.warn({ request_id: requestId, err: cause instanceof Error ? cause.message : String(cause) }, "idempotency record not written");
}
