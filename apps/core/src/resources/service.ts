import type { MessageInitShape } from "@bufbuild/protobuf";
import { RESOURCE_STATUS, ResourceStatus, type ResourceSchema, type ResourceService, type ServiceImplementation } from "@rms/proto";
import { errors } from "../errors.js";
import { NO_FAULTS, type Faults } from "../faults.js";
import { requestInfo, tenantOf } from "../grpc/call-info.js";
import { budgetOf } from "../grpc/budget.js";
import { pageOf } from "../grpc/list-request.js";
import type { PresentedKeyCheck } from "../accounts/presented-key.js";
import type { ResourceStatusName } from "./model.js";
import type { LoadedResource, ResourceStore } from "./store.js";
import { mergeMetadata, metadataUpdate } from "../metadata.js";
import { validateName } from "./validation.js";

/** UNSPECIFIED means "not given"; any other unknown number is invalid. */
function statusName(value: ResourceStatus, param = "status"): ResourceStatusName | undefined {
  if (value === ResourceStatus.UNSPECIFIED) return undefined;
  const name = RESOURCE_STATUS.nameOf(value);
  if (!name) throw errors.invalid("parameter_invalid", "Invalid status: must be one of active, paused or archived.", param);
  return name;
}

function toMessage(doc: LoadedResource): MessageInitShape<typeof ResourceSchema> {
  return {
    id: doc._id,
    name: doc.name,
    status: RESOURCE_STATUS.valueOf(doc.status),
    metadata: doc.metadata.map((p) => ({ key: p.k, value: p.v })),
    created: BigInt(doc.created),
    livemode: doc.livemode,
  };
}

/** Calls that present no key (operator tools holding the internal credential) are not checked. */
const NO_KEY_CHECK: PresentedKeyCheck = async () => undefined;

/**
 * The ResourceService RPCs: domain validation, the presented key (see
 * accounts/presented-key.ts), then the store, within the caller's deadline.
 * A write starts only once the key is confirmed; a read runs alongside the key
 * check and its result is dropped if the key is refused.
 */
export function resourceService(store: ResourceStore, faults: Faults = NO_FAULTS, checkKey: PresentedKeyCheck = NO_KEY_CHECK): ServiceImplementation<typeof ResourceService> {
  return {
    async createResource(request, context) {
      const tenant = tenantOf(request.tenant);
      const budget = budgetOf(context);
      const fields = {
        name: validateName(request.name),
        status: statusName(request.status) ?? "active",
        metadata: mergeMetadata([], request.metadata),
      };
      await checkKey(context, tenant, budget.db());
      const created = await store.create(tenant, fields, requestInfo(context), budget);
      faults.afterWrite("resource.create");
      if ("conflict" in created) {
        throw errors.of("idempotency_key_reused", "Keys for idempotent requests can only be used with the same parameters they were first used with.");
      }
      return { resource: toMessage(created.doc) };
    },

    async getResource(request, context) {
      const tenant = tenantOf(request.tenant);
      const budget = budgetOf(context);
      const [doc] = await Promise.all([store.get(tenant, request.id, budget), checkKey(context, tenant, budget.db())]);
      if (!doc) throw errors.notFound("resource", request.id);
      return { resource: toMessage(doc) };
    },

    async updateResource(request, context) {
      const tenant = tenantOf(request.tenant);
      const name = request.name === undefined ? undefined : validateName(request.name);
      const status = statusName(request.status);
      const metadata = metadataUpdate(request.metadata, request.clearMetadata);
      const budget = budgetOf(context);
      await checkKey(context, tenant, budget.db());
      const doc = await store.update(
        tenant,
        request.id,
        {
          ...(name !== undefined ? { name } : {}),
          ...(status !== undefined ? { status } : {}),
          ...(metadata ? { metadata } : {}),
        },
        requestInfo(context),
        budget,
      );
      if (!doc) throw errors.notFound("resource", request.id);
      return { resource: toMessage(doc) };
    },

    async deleteResource(request, context) {
      const tenant = tenantOf(request.tenant);
      const budget = budgetOf(context);
      await checkKey(context, tenant, budget.db());
      const doc = await store.delete(tenant, request.id, requestInfo(context), budget);
      if (!doc) throw errors.notFound("resource", request.id);
      return { id: doc._id };
    },

    async listResources(request, context) {
      const tenant = tenantOf(request.tenant);
      const paging = pageOf(request, "res", "resource");
      const status = statusName(request.status);
      const budget = budgetOf(context);
      const [page] = await Promise.all([store.list(tenant, { ...paging, ...(status ? { status } : {}) }, budget), checkKey(context, tenant, budget.db())]);
      return { resources: page.items.map(toMessage), hasMore: page.hasMore };
    },
  };
}
