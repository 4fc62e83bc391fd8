import type { Request, Response } from "express";
import type { Logger } from "pino";
import type { CoreCall, CoreClients, CoreServiceName, RpcName, RpcReply, RpcRequest } from "../core.js";
import type { ErrorCode } from "../errors.js";
import type { Params } from "../parsing/body.js";
import { optionalBoolean } from "../parsing/params.js";
import type { Scope } from "../auth/auth.js";
import type { Principal, Tenant } from "../auth/principal.js";
import { renderAnswer, type JsonSchema, type PublicObject, type RenderedAnswer } from "../schema/objects.js";
import type { ParamSpec } from "../schema/params.js";
import type { RequestLogStore } from "../request-logs/store.js";
import type { StreamServices } from "../streams/services.js";

export type { ParamSpec };

/** The gateway's own stores an operation may read instead of calling core: the request logs (docs/request-logs.md). */
export interface LocalStores {
  readonly requestLogs: RequestLogStore;
}

/**
 * What a webhook delivery of one event type carries, described in the API document's `webhooks` section (an
 * event object whose `type` is this one and whose `data` holds these), so receivers generate their types from the
 * same document as clients. Each object kind lists the event types it announces (its route folder's index).
 */
export interface EventPayload {
  readonly type: string;
  /** One line: when the event is sent. */
  readonly summary: string;
  /** The object `data.object` holds. */
  readonly object: PublicObject<never>;
  /** `data.previous_attributes`: the old values of the changed fields (an update). */
  readonly previousAttributes?: boolean;
  /** `data.reason`, always present, one of these. */
  readonly reasons?: readonly string[];
}

/** A path served without a key (status, this document), described by its route file. */
export interface KeylessRoute {
  readonly path: string;
  readonly operationId: string;
  /** Its SDK namespace and method, when clients call it (`status.retrieve`). */
  readonly client?: { readonly namespace: string; readonly method: string };
  readonly summary: string;
  readonly description: string;
  /** By HTTP status: the object answered (or a bare schema), and whether Retry-After comes with it. */
  readonly responses: Readonly<Record<string, { description: string; object?: PublicObject<never>; schema?: JsonSchema; retryAfter?: boolean }>>;
}

/** What parsing a request starts from: its parameters, path parameters and tenant. */
export interface OperationInput {
  /** Query and body parameters (null-prototype; unknown ones already refused). */
  readonly params: Params;
  /** Path parameters such as `id`. */
  readonly path: Readonly<Record<string, string>>;
  readonly tenant: Tenant;
  /** The key the request was made with (its id and kind, never its secret). */
  readonly key: Pick<Principal, "keyId" | "kind" | "dashboardSession">;
  /** The origin the request was addressed to (`https://<Host>`), for answers that carry a link (a dashboard session). */
  readonly origin?: string;
}

/** What an operation answers on success. */
export interface SuccessSpec<O> {
  readonly status: number;
  readonly description: string;
  /** The public object of the answer: renders the body and describes it. */
  readonly object: PublicObject<O>;
  /** A variant's answer (`withVariant`): the boolean parameter that, when true, selects it. */
  readonly selectedBy?: string;
}

/** The one core call a request stands for, and how its reply is answered. */
export interface PreparedCall extends CoreCall {
  /** The answer's status and object. */
  readonly success: SuccessSpec<never>;
  /** False for a call that changes nothing: one that failed in transit did nothing (503, never `outcome_unknown`). */
  readonly write: boolean;
  /** The success body, from core's reply: its JSON text (and the object it was written from, when there was one). */
  render(reply: unknown): RenderedAnswer;
  /** Instead of the core call: a read of the gateway's own stores (an operation of `defineLocalOperation`). */
  readonly local?: (stores: LocalStores) => Promise<unknown>;
}

/**
 * One public operation, described as data: the route table registers it, the
 * API description is built from it, and the request flow runs it as
 * parse (`prepare`) -> one core call -> `render`.
 */
export interface Operation {
  readonly method: "GET" | "POST" | "DELETE";
  /** Express path, e.g. `/v1/resources/:id`. */
  readonly path: string;
  /** The scope its key needs; null: any key of the account (`access` says who), and a publishable key only reads. */
  readonly scope: Scope | null;
  /** Who may call it, for the API description, when its scope does not say (a null scope). */
  readonly access?: string;
  /** One line for the API description. */
  readonly summary: string;
  /** Every parameter it accepts (query or body), by name; any other is 400 parameter_unknown. */
  readonly parameters: Readonly<Record<string, ParamSpec>>;
  /** The names of `parameters`. */
  readonly params: readonly string[];
  /** The names of `parameters` that take a list (a form body's single `name=a` is a list of one). */
  readonly listParams: readonly string[];
  /** Each `:name` of the path. */
  readonly pathParameters: Readonly<Record<string, ParamSpec>>;
  readonly success: SuccessSpec<never>;
  /** Other answers its parameters may select (`withVariant`), described beside `success`. */
  readonly variants: readonly SuccessSpec<never>[];
  /** The error codes of its own (parameter checks, core's answers), besides those every operation may get. */
  readonly errors: readonly ErrorCode[];
  /** Most parameters its body may hold (default: the API's 1,000). */
  readonly bodyParameterLimit?: number;
  /** The deadline of its core call, when it must differ from CORE_CALL_TIMEOUT_MS (a call that waits on a receiver). */
  readonly timeoutMs?: number;
  /** Only a secret key may run it (a dashboard session), whatever scopes a restricted key holds. */
  readonly secretKeyOnly?: boolean;
  /**
   * Answered by the gateway alone (`defineLocalOperation`): no core call re-checks its key, so core verifies the key
   * on every request (revoked or expired: refused at once), never from the cache of verified keys.
   */
  readonly local?: boolean;
  /** With `secretKeyOnly`: a dashboard session's key may run it too (the account's keys page lists them). */
  readonly orDashboardSession?: boolean;
  /** Its SDK method when the naming rules (client-names.ts) would name it badly (`addPart` for POST /v1/uploads/:id/parts). */
  readonly clientMethod?: string;
  /** Checks the request and makes the one core call it stands for (throws ApiError on bad input). */
  prepare(input: OperationInput): PreparedCall;
  /**
   * An operation whose request body or answer is a byte stream (files): run after the key, the rate limit and the
   * scope instead of parse -> one core call -> render (`prepare` is then never called). See `defineStreamOperation`.
   */
  readonly stream?: StreamSpec;
}

/** What a stream operation's handler gets: the request and response themselves, and what the gateway knows of the call. */
export interface StreamInput {
  readonly req: Request;
  readonly res: Response;
  readonly tenant: Tenant;
  /** The id of the key the request was made with (`key_...`). */
  readonly keyId: string;
  readonly path: Readonly<Record<string, string>>;
  /** Query parameters (GET), unknown ones already refused. */
  readonly params: Params;
  /** The Idempotency-Key of a POST, if any. */
  readonly key: string | undefined;
  /** The metadata of its core calls: request id, presented key (a POST adds its Idempotency-Key: idempotency/keyed-call.ts). */
  readonly metadata: Readonly<Record<string, string>>;
  readonly core: CoreClients;
}

/** How a stream operation differs from the others: its body and answer as described, and its handler. */
export interface StreamSpec {
  /** Its request body, when it has one: by content type, as the API description shows it. */
  readonly requestBody?: { readonly description: string; readonly required: boolean; readonly content: Readonly<Record<string, JsonSchema>> };
  /** Its success answer's content, when not the success object as JSON: by content type, with its own headers. */
  readonly successContent?: {
    readonly content: Readonly<Record<string, JsonSchema>>;
    readonly headers: Readonly<Record<string, JsonSchema>>;
    readonly extra?: Readonly<Record<string, { description: string; headers: Readonly<Record<string, JsonSchema>> }>>;
  };
  /** Its body streams in past the 1 MiB body limit and the 30 s request timeout (its own limit; cut when idle 30 s). */
  readonly streamsBody: boolean;
  /** Serves the request; throws ApiError as other operations do (before anything was sent). */
  handle(input: StreamInput, deps: StreamDeps): Promise<void>;
}

/** What a stream handler may use of the gateway besides core (the file size limit, the logger, the event streams). */
export interface StreamDeps {
  readonly filesMaxBytes: number;
  readonly logger: Logger;
  /** The hubs, feeds and limits of `GET /v1/events/stream` and `GET /v1/request_logs/stream`; absent: they answer 503. */
  readonly streams?: StreamServices | undefined;
  /** The gateway's own stores (the request logs). */
  readonly local?: LocalStores | undefined;
}

/** A stream operation as its route file writes it. */
export interface StreamOperationSpec extends DescriptionSpec<never> {
  readonly stream: StreamSpec;
  /** Served from the gateway's own store (the request-log stream): its key is verified by core when it opens (`Operation.local`). */
  readonly local?: boolean;
}

export function defineStreamOperation(spec: StreamOperationSpec): Operation {
  return {
    ...described(spec),
    ...(spec.local ? { local: true } : {}),
    stream: spec.stream,
    prepare: () => {
      throw new Error(`${spec.method} ${spec.path} is a stream operation: it has no single core call`);
    },
  };
}

/** What describes every kind of operation alike (core call, stream or local read): its route, parameters, answer and limits. */
interface DescriptionSpec<O> {
  readonly method: Operation["method"];
  readonly path: string;
  readonly scope: Scope | null;
  readonly access?: string;
  readonly summary: string;
  readonly parameters?: Readonly<Record<string, ParamSpec>>;
  readonly pathParameters?: Readonly<Record<string, ParamSpec>>;
  readonly success: SuccessSpec<O>;
  readonly errors?: readonly ErrorCode[];
  readonly bodyParameterLimit?: number;
  readonly timeoutMs?: number;
  /** Only a secret key may run it, whatever scopes a restricted key holds. */
  readonly secretKeyOnly?: boolean;
  /** With `secretKeyOnly`: a dashboard session's key may run it too. */
  readonly orDashboardSession?: boolean;
  /** Its SDK method, when the naming rules (client-names.ts) would name it badly. */
  readonly clientMethod?: string;
}

/** The one mapping of a spec to the operation's description; each kind adds how it runs (`prepare`, `stream`). */
function described<O>(spec: DescriptionSpec<O>): Omit<Operation, "prepare" | "stream"> {
  const parameters = spec.parameters ?? {};
  return {
    method: spec.method,
    path: spec.path,
    scope: spec.scope,
    ...(spec.access !== undefined ? { access: spec.access } : {}),
    summary: spec.summary,
    parameters,
    params: Object.keys(parameters),
    listParams: Object.entries(parameters)
      .filter(([, param]) => param.schema["type"] === "array")
      .map(([name]) => name),
    pathParameters: spec.pathParameters ?? {},
    success: spec.success as SuccessSpec<never>,
    variants: [],
    // A query string given an empty value is refused by one rule for every GET (engine/run.ts): say so.
    errors:
      spec.method === "GET" && Object.keys(parameters).length > 0 && !spec.errors?.includes("parameter_invalid_empty")
        ? [...(spec.errors ?? []), "parameter_invalid_empty"]
        : (spec.errors ?? []),
    ...(spec.bodyParameterLimit !== undefined ? { bodyParameterLimit: spec.bodyParameterLimit } : {}),
    ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
    ...(spec.secretKeyOnly ? { secretKeyOnly: true } : {}),
    ...(spec.orDashboardSession ? { orDashboardSession: true } : {}),
    ...(spec.clientMethod ? { clientMethod: spec.clientMethod } : {}),
  };
}

/** An operation as its route file writes it: typed against the core RPC it calls. */
export interface OperationSpec<S extends CoreServiceName, M extends RpcName<S>, O> extends DescriptionSpec<O> {
  /** A POST whose call changes nothing (a preview): a failure in transit is 503, not `outcome_unknown`. */
  readonly readOnly?: boolean;
  readonly service: S;
  readonly rpc: M;
  /** The request message, from the checked parameters. */
  request(input: OperationInput): RpcRequest<S, M>;
  /** What of the reply the success object renders (with the request, for an answer that repeats some of it). */
  reply(reply: RpcReply<S, M>, input: OperationInput): O | undefined;
}

export function defineOperation<S extends CoreServiceName, M extends RpcName<S>, O>(spec: OperationSpec<S, M, O>): Operation {
  const description = described(spec);
  const write = spec.method !== "GET" && !spec.readOnly;
  return {
    ...description,
    prepare: (input) => ({
      service: spec.service,
      rpc: spec.rpc,
      request: spec.request(input),
      success: description.success,
      write,
      render: (reply) => renderAnswer(spec.success.object, spec.reply(reply as RpcReply<S, M>, input)),
    }),
  };
}

/**
 * An operation that answers otherwise when its boolean parameter `flag` is true: another core call and another
 * success (POST /v1/jobs with `validate_only=true` answers a 200 `job_preview`). The variant has the same method,
 * path, scope and parameters, so the request is refused or accepted alike up to the choice; the API document shows
 * both answers and names the flag that selects the variant's (`x-rms-selected-by`), so a typed client answers each
 * call with the right one. The flag is read after the parameters are known, and a value that is not a boolean is 400.
 */
export function withVariant(operation: Operation, variant: Operation, flag: string): Operation {
  const same =
    variant.method === operation.method &&
    variant.path === operation.path &&
    variant.scope === operation.scope &&
    variant.params.join() === operation.params.join();
  if (!same) throw new Error(`withVariant: ${variant.method} ${variant.path} differs from the operation it varies`);
  if (!operation.parameters[flag]) throw new Error(`withVariant: ${operation.method} ${operation.path} has no parameter '${flag}'`);
  return {
    ...operation,
    variants: [...operation.variants, { ...variant.success, selectedBy: flag }, ...variant.variants],
    prepare: (input) => (optionalBoolean(input.params, flag) === true ? variant : operation).prepare(input),
  };
}

/** A read the gateway answers from its own stores (the request logs), as its route file writes it. */
export interface LocalOperationSpec<R, O>
  extends Omit<DescriptionSpec<O>, "bodyParameterLimit" | "timeoutMs" | "secretKeyOnly" | "orDashboardSession" | "clientMethod"> {
  readonly method: "GET";
  /** Checks the request (throws ApiError on bad input) and returns the read it stands for. */
  read(input: OperationInput): (stores: LocalStores) => Promise<R>;
  /** What of the read's result the success object renders. */
  reply(result: R): O | undefined;
}

/**
 * An operation served by the gateway from its own store rather than by core (the request logs, which are the
 * gateway's records of its HTTP answers: docs/request-logs.md). It runs the same request flow as every other
 * (key, rate limit, scope, parameters, errors), with the store read in place of the core call.
 */
export function defineLocalOperation<R, O>(spec: LocalOperationSpec<R, O>): Operation {
  const description = described(spec);
  return {
    ...description,
    local: true,
    prepare: (input) => {
      const read = spec.read(input);
      return {
        // No core call: `local` runs instead (engine/run.ts); the names only label it.
        service: "admin",
        rpc: `local:${spec.method} ${spec.path}`,
        request: null,
        success: description.success,
        write: false,
        local: read,
        render: (reply) => renderAnswer(spec.success.object, spec.reply(reply as R)),
      };
    },
  };
}
