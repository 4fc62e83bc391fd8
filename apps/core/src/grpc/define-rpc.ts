import { create, toBinary, type DescMethodClientStreaming, type DescMethodUnary } from "@bufbuild/protobuf";
import type { AnyService, CallContext, ServiceImplementation, Tenant as TenantMessage } from "@rms/proto";
import type { RequestInfo, Tenant } from "../caller.js";
import { errors } from "../errors.js";
import { budgetOf, type Budget } from "../budget.js";
import { requestInfo, tenantOf } from "./call-info.js";
import { runUnderKey, runUploadUnderKey, type IdempotencyPolicy, type KeyedCalls } from "./idempotent.js";
import { UploadStream, type UploadEnd, type UploadMessage } from "./upload-stream.js";

/**
 * One way to declare a tenant-scoped RPC, core's counterpart of the gateway's `defineOperation`: a
 * read or a write, described by its domain steps, run by one machinery in one order:
 *
 *   tenant (parameter_missing) -> `parse` (the domain checks, no database) -> presented key -> `load`/`write` -> `reply`
 *
 * Under an Idempotency-Key (the gateway sends one with every POST) the same steps run inside the key's record
 * (idempotent.ts): `tenant -> [presented key | lock] -> parse -> load/write -> reply -> record`, or the recorded
 * answer is replayed; each declaration's `idempotency` option says how (`"recorded"` by default, `"sealed"` for an
 * answer holding a secret, `"none"`). So every write, and any future one, is exactly once by its declaration alone.
 *
 * A write starts only once the presented key is confirmed, and an idempotent create the store found under
 * the same Idempotency-Key with other parameters (`{ conflict: true }`) is refused with the catalogue's
 * `idempotency_key_reused`. A read's `load` runs alongside the key check, and its result is dropped when
 * the key is refused; what comes after the check (not found, a second read) is in `reply`. Every database
 * command gets the time the caller's deadline leaves (budget.ts).
 */

/**
 * Checks a call's presented key against the tenant it acts on (accounts/presented-key.ts). The check core's domains
 * get (domains.ts `domainContext`) also carries `keyed`: the idempotency records every declared RPC runs under when
 * its call has an Idempotency-Key; a bare check (a unit test's) runs without them.
 */
export type PresentedKeyCheck = ((context: CallContext, tenant: Tenant, options?: { timeoutMS?: number }) => Promise<void>) & { readonly keyed?: KeyedCalls };

/** What a declared RPC's steps get besides their input: on whose behalf, within what time, for which request. */
export interface Call {
  readonly tenant: Tenant;
  readonly budget: Budget;
  /** The request id and Idempotency-Key, recorded with the events a write records. */
  readonly info: RequestInfo;
}

/** A request that acts on one tenant's data (and may name one of its objects by `id`). */
interface Scoped {
  readonly tenant?: TenantMessage | undefined;
  readonly id?: unknown;
}

/** What a store answers for a create whose Idempotency-Key was first used with other parameters. */
export interface IdempotencyConflict {
  readonly conflict: true;
}

/** One declared RPC, as `defineRpcs` serves it. */
export interface Rpc<Req, Res> {
  /** `method`: the RPC's descriptor (defineRpcs gives it), which the idempotency records need to keep its answer. */
  run(request: Req, context: CallContext, checkKey: PresentedKeyCheck, method?: DescMethodUnary): Promise<Res>;
}

interface Steps<Req, In> {
  /** The domain checks of the request, before the key check and any database command (default: the request as it is). */
  parse?(request: Req): In;
  /**
   * Exactly once under the call's Idempotency-Key (idempotent.ts): `"recorded"` (default), `"sealed"` (the answer
   * holds a secret, recorded encrypted), `"none"` (the key is only recorded with the events).
   */
  idempotency?: IdempotencyPolicy;
  /**
   * Under a key, the write's commands and the record of its answer commit in one transaction (idempotent.ts), so the
   * answer costs no write of its own. For a write of a few single-document commands, each given the call's
   * `budget.db()` (a create).
   */
  atomic?: boolean;
}

export interface ReadSpec<Req, In, T, Res> extends Steps<Req, In> {
  /** The read, alongside the presented-key check. */
  load(input: In, call: Call): Promise<T>;
  /** The answer, once the key is confirmed (a missing object, a second read). */
  reply(loaded: T, input: In, call: Call): Res | Promise<Res>;
}

export interface WriteSpec<Req, In, T, Res> extends Steps<Req, In> {
  /** The write, once the presented key is confirmed. */
  write(input: In, call: Call): Promise<T>;
  /** The answer from what the write returned (an idempotency conflict never reaches it). */
  reply(written: Exclude<T, IdempotencyConflict>, input: In, call: Call): Res | Promise<Res>;
}

function prologue<Req extends Scoped, In>(spec: Steps<Req, In>, request: Req, context: CallContext): { input: In; call: Call } {
  const tenant = tenantOf(context, request.tenant, request.id);
  const input = spec.parse ? spec.parse(request) : (request as unknown as In);
  return { input, call: { tenant, budget: budgetOf(context), info: requestInfo(context) } };
}

function isConflict(value: unknown): value is IdempotencyConflict {
  return typeof value === "object" && value !== null && (value as Partial<IdempotencyConflict>).conflict === true;
}

/**
 * The call under its Idempotency-Key when it has one and the declaration keeps it (idempotent.ts); null when it runs
 * plainly. `execute` is parse -> load/write -> reply, the presented key being checked beside the lock.
 */
function keyedRun<Req extends Scoped, In, Res>(
  spec: Steps<Req, In>,
  request: Req,
  context: CallContext,
  checkKey: PresentedKeyCheck,
  method: DescMethodUnary | undefined,
  execute: (input: In, call: Call) => Promise<Res>,
): Promise<Res> | null {
  const policy = spec.idempotency ?? "recorded";
  const keyed = checkKey.keyed;
  if (policy === "none" || !keyed || !method) return null;
  const info = requestInfo(context);
  const key = info.idempotencyKey;
  if (key === null) return null;
  const tenant = tenantOf(context, request.tenant, request.id);
  const budget = budgetOf(context);
  const call: Call = { tenant, budget, info };
  return runUnderKey({
    keyed,
    policy,
    method,
    request,
    context,
    tenant,
    budget,
    info: { ...info, idempotencyKey: key },
    checkKey,
    atomic: spec.atomic === true,
    execute: (within = budget) => execute(spec.parse ? spec.parse(request) : (request as unknown as In), { ...call, budget: within }),
  });
}

/** A read: `load` runs alongside the presented-key check; a refused key drops its result. */
function read<Req extends Scoped, T, Res, In = Req>(spec: ReadSpec<Req, In, T, Res>): Rpc<Req, Res> {
  return {
    async run(request, context, checkKey, method) {
      // A POST that reads (a job's preview) is kept under its key as any other.
      const keyed = keyedRun(spec, request, context, checkKey, method, async (input, call) => spec.reply(await spec.load(input, call), input, call));
      if (keyed) return keyed;
      const { input, call } = prologue(spec, request, context);
      // Taken before the read starts: with no time left the call fails here, with nothing started.
      const keyOptions = call.budget.db();
      const [loaded] = await Promise.all([spec.load(input, call), checkKey(context, call.tenant, keyOptions)]);
      return spec.reply(loaded, input, call);
    },
  };
}

/** A write: starts once the presented key is confirmed; an idempotency conflict is `idempotency_key_reused`. */
function write<Req extends Scoped, T, Res, In = Req>(spec: WriteSpec<Req, In, T, Res>): Rpc<Req, Res> {
  const perform = async (input: In, call: Call): Promise<Res> => {
    const written = await spec.write(input, call);
    if (isConflict(written)) throw errors.of("idempotency_key_reused");
    return spec.reply(written as Exclude<T, IdempotencyConflict>, input, call);
  };
  return {
    async run(request, context, checkKey, method) {
      const keyed = keyedRun(spec, request, context, checkKey, method, perform);
      if (keyed) return keyed;
      const { input, call } = prologue(spec, request, context);
      await checkKey(context, call.tenant, call.budget.db());
      return perform(input, call);
    },
  };
}

export interface UploadSpec<Start, In, T, Res> extends Steps<Start, In> {
  /** Checks of what the stream's end carries (fields sent after the bytes); a throw fails the bytes, nothing kept. */
  end?(end: UploadEnd, input: In): void;
  /**
   * The write, once the presented key is confirmed: reads the bytes to their end (they throw if the stream was cut
   * off). With `atomic`, its document is written with `call.budget.db()` once the bytes are durable: under a key it
   * then commits with the record of its answer.
   */
  write(input: In, bytes: AsyncIterable<Uint8Array>, call: Call): Promise<T>;
  reply(written: T, input: In, call: Call): Res | Promise<Res>;
}

/** One declared client-streaming upload, as a service's handler runs it. */
export interface UploadRpc<Start, Res> {
  run(requests: AsyncIterable<UploadMessage<Start>>, context: CallContext, checkKey: PresentedKeyCheck, method?: DescMethodClientStreaming): Promise<Res>;
}

/**
 * An upload: a client-streaming write whose messages are a start (the tenant and the fields), the bytes, and an end
 * (upload-stream.ts). `parse` checks the start before any byte is stored; the presented key is confirmed before
 * `write` reads the bytes. Under an Idempotency-Key it runs by the key protocol (idempotent.ts
 * `runUploadUnderKey`): the lock is taken at the stream's start, the fingerprint completed by the bytes' sha256 and
 * the end at the stream's end, the answer recorded before it is sent, a repeat answered the first outcome.
 */
function upload<Start extends Scoped, T, Res, In = Start>(spec: UploadSpec<Start, In, T, Res>): UploadRpc<Start, Res> {
  return {
    async run(requests, context, checkKey, method) {
      const policy = spec.idempotency ?? "recorded";
      const info = requestInfo(context);
      const key = info.idempotencyKey;
      const keyed = policy !== "none" && method && key !== null ? (checkKey.keyed ?? null) : null;
      const serialize = keyed && method ? (message: UploadMessage<Start>) => toBinary(method.input, create(method.input, message as never)) : null;
      const stream = await UploadStream.open(requests, serialize);
      // Every check of the start (and the key's record) is made before the bytes are first asked for: the caller
      // learns it may send them only then (files.proto).
      stream.onReady = context.sendHeaders ?? null;
      const tenant = tenantOf(context, stream.start.tenant);
      const budget = budgetOf(context);
      const call: Call = { tenant, budget, info };
      const perform = async (input: In, within: Budget): Promise<Res> => {
        const written = await spec.write(input, stream.bytes(spec.end ? (end) => spec.end!(end, input) : undefined), { ...call, budget: within });
        return spec.reply(written, input, call);
      };
      const parse = () => (spec.parse ? spec.parse(stream.start) : (stream.start as unknown as In));
      if (keyed === null || !method || key === null || policy === "none") {
        const input = parse();
        await checkKey(context, tenant, budget.db());
        return perform(input, budget);
      }
      return runUploadUnderKey({
        keyed,
        policy,
        method,
        context,
        tenant,
        budget,
        info: { ...info, idempotencyKey: key },
        checkKey,
        stream,
        atomic: spec.atomic === true,
        execute: (within) => perform(parse(), within),
      });
    },
  };
}

/**
 * The three kinds of declaration: `rpc.read({ parse?, load, reply })`, `rpc.write({ parse?, write, reply })` and
 * the client-streaming `rpc.upload({ parse?, end?, write, reply })`.
 */
export const rpc = { read, write, upload };

type RequestOf<S, K extends keyof ServiceImplementation<S>> = Parameters<ServiceImplementation<S>[K]>[0];
type ReplyOf<S, K extends keyof ServiceImplementation<S>> = Awaited<ReturnType<ServiceImplementation<S>[K]>>;

/**
 * One declaration per method of the service: a missing or misspelled one does not compile. A server-streaming
 * method is its handler itself (an async iterable of messages, such as a watch): it makes its own checks.
 */
export type RpcDeclarations<S> = {
  readonly [K in keyof ServiceImplementation<S>]: ServiceImplementation<S>[K] extends (request: never, context: CallContext) => AsyncIterable<unknown>
    ? ServiceImplementation<S>[K]
    : Rpc<RequestOf<S, K>, ReplyOf<S, K>>;
};

/** A service's handlers from its declarations, each checking the presented key with `checkKey`. */
export function defineRpcs<S extends AnyService>(service: S, checkKey: PresentedKeyCheck, rpcs: RpcDeclarations<S>): ServiceImplementation<S> {
  const declared = rpcs as unknown as Readonly<Record<string, Rpc<unknown, unknown> | ((request: unknown, context: CallContext) => AsyncIterable<unknown>)>>;
  const handlers = service.methods.map((method) => {
    const declaration = declared[method.localName];
    if (!declaration) throw new Error(`no declaration for ${service.typeName}.${method.name}`);
    if (typeof declaration === "function") return [method.localName, declaration] as const;
    return [method.localName, (request: unknown, context: CallContext) => declaration.run(request, context, checkKey, method as DescMethodUnary)] as const;
  });
  return Object.fromEntries(handlers) as unknown as ServiceImplementation<S>;
}

/** The object a read or write found, or `resource_missing` naming its kind and id. */
export function found<T>(doc: T | null | undefined, kind: string, id: string, param?: string): T {
  if (doc === null || doc === undefined) throw errors.notFound(kind, id, param);
  return doc;
}
