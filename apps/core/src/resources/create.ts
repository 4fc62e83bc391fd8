import type { MessageInitShape } from "@bufbuild/protobuf";
import { status as GrpcStatus } from "@grpc/grpc-js";
import { RpcError, type CreateResourceRequest, type CreateResourceResponseSchema, type ResourceSchema } from "@rms/proto";
import type { Db } from "mongodb";
import type { Tenant } from "../caller.js";
import { errors } from "../errors.js";
import type { Faults } from "../faults.js";
import { budgetOf, type Budget } from "../grpc/budget.js";
import { answerRequest, requestInfo, tenantOf } from "../grpc/call-info.js";
import type { PresentedKeyCheck, Rpc } from "../grpc/define-rpc.js";
import { gatewayHoldsKey } from "../storage/gateway-records.js";
import { idempotencyScope, type AnsweredInsertResult } from "../storage/idempotent-insert.js";
import type { ResourceDocument } from "./model.js";
import type { CallerAnswer, LoadedResource, ResourceFields, ResourceStore } from "./store.js";

type Reply = MessageInitShape<typeof CreateResourceResponseSchema>;

/** What the create RPC needs besides the store. */
export interface CreateDeps {
  readonly store: ResourceStore;
  readonly faults: Faults;
  readonly db: Db;
  /** The domain checks of the request (no database). */
  readonly parse: (request: CreateResourceRequest) => ResourceFields;
  readonly toMessage: (doc: LoadedResource) => MessageInitShape<typeof ResourceSchema>;
}

const IN_USE =
  "There is currently another in-progress request using this Idempotency-Key (that probably means you submitted twice, and the other request is still going through). Please try again later.";

/**
 * CreateResource. A call under an Idempotency-Key that carries the gateway's fingerprint and answer headers
 * (`rms-request-fingerprint`, `rms-answer-headers`) has its answer recorded with the resource, under the key's unique
 * index, in the one insert that creates it: exactly once without a lock or record of the gateway's
 * (docs/idempotency-and-limits.md, "The create's answer in the key's slot"):
 *
 *   tenant -> parse -> presented key, alongside a read of the gateway's record of the key -> insert -> reply
 *
 * - A repeat finds the first document and gets its recorded answer back (`replay`), the resource as that answer
 *   showed it; while the first is not yet majority-committed, `idempotency_key_in_use`.
 * - Another request under the key (the gateway's fingerprints differ): `idempotency_key_reused`.
 * - Parameters core refuses are recorded too (a document holding the key and the error, no resource), so the
 *   repeat gets that refusal back and another request under the key `idempotency_key_reused`.
 * - A key the gateway holds a record of (another operation used it, or a create answered before answers were
 *   recorded here) is the gateway's to decide: `replay.unrecorded`, nothing written; so is a key bound to a
 *   create that recorded no answer (an operator's call).
 * Without those metadata (an operator's call, the gateway's own record path) it is the plain idempotent create.
 */
export function createResourceRpc(deps: CreateDeps): Rpc<CreateResourceRequest, Reply> {
  const { store, faults, db } = deps;
  return {
    async run(request, context, checkKey) {
      const tenant = tenantOf(request.tenant);
      const budget = budgetOf(context);
      const info = requestInfo(context);
      const asked = answerRequest(context);
      const key = info.idempotencyKey;
      const recordHere: CallerAnswer | null = key !== null && asked?.headers ? { fingerprint: asked.fingerprint, headers: asked.headers } : null;
      let fields: ResourceFields;
      try {
        fields = deps.parse(request);
      } catch (error) {
        if (!recordHere || key === null || !(error instanceof RpcError) || error.grpcCode !== GrpcStatus.INVALID_ARGUMENT) throw error;
        if (await gatewayDecides(checkKey, context, tenant, key, budget)) return { replay: { unrecorded: true } };
        // Well-formed, as the error travels (a lone surrogate becomes U+FFFD), so its replay says the same words.
        const refused = { type: error.type, code: error.code, message: error.message.toWellFormed(), param: error.param ?? "" };
        const outcome = await store.refuse(tenant, key, refused, info, recordHere, budget);
        if ("recorded" in outcome) throw error;
        return answerOf(outcome, true);
      }
      if (!recordHere || key === null) {
        await checkKey(context, tenant, budget.db());
        const written = await store.create(tenant, fields, info, budget);
        faults.afterWrite("resource.create");
        return answerOf(written, false);
      }
      if (await gatewayDecides(checkKey, context, tenant, key, budget)) return { replay: { unrecorded: true } };
      const written = await store.create(tenant, fields, info, budget, recordHere);
      faults.afterWrite("resource.create");
      return answerOf(written, true);
    },
  };

  /** The presented key, checked alongside a read of the gateway's record of the key: true when that record decides. */
  async function gatewayDecides(checkKey: PresentedKeyCheck, context: Parameters<PresentedKeyCheck>[0], tenant: Tenant, key: string, budget: Budget): Promise<boolean> {
    const options = budget.db();
    const [, held] = await Promise.all([checkKey(context, tenant, options), gatewayHoldsKey(db, idempotencyScope(tenant, key), Date.now(), options)]);
    return held;
  }

  /** The reply to what the key's slot held or now holds; `recorded`: the caller asked for the answer in the slot. */
  function answerOf(result: AnsweredInsertResult<ResourceDocument>, recorded: boolean): Reply {
    if ("conflict" in result) throw errors.of("idempotency_key_reused");
    if ("inFlight" in result) throw errors.conflict("idempotency_key_in_use", IN_USE);
    const { doc, replayed } = result;
    const answer = doc.answer;
    // The resource as the first answer showed it (it may have changed since).
    const shown = answer?.shown ? ({ ...doc, ...answer.shown } as LoadedResource) : doc;
    if (!replayed || !recorded) return { resource: deps.toMessage(shown) };
    if (!answer) return { resource: deps.toMessage(doc), replay: { unrecorded: true } };
    const replay = { requestId: answer.request_id ?? "", headers: answer.headers };
    if (answer.refused) return { replay: { ...replay, error: answer.refused } };
    return { resource: deps.toMessage(shown), replay };
  }
}
