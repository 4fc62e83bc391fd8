import type { MessageInitShape } from "@bufbuild/protobuf";
import { RESOURCE_STATUS, ResourceService, ResourceStatus, SEARCH_LIMIT_DEFAULT, type ResourceSchema, type ServiceImplementation } from "@rms/proto";
import { afterCommit } from "../budget.js";
import { errors } from "../errors.js";
import type { Faults } from "../faults.js";
import { defineRpcs, found, rpc, type PresentedKeyCheck } from "../grpc/define-rpc.js";
import { limitOf, pageOf } from "../grpc/list-request.js";
import type { AnsweredResource, ResourceStatusName } from "./model.js";
import type { ResourceStore } from "./store.js";
import { mergeMetadata, metadataUpdate } from "../metadata.js";
import { filterFromMessage } from "./filter.js";
import { resourcesJson } from "./render.js";
import { pagePosition, pageToken } from "./search.js";
import { parseSearchQuery } from "./search-query.js";
import { validateName } from "./validation.js";

/** UNSPECIFIED means "not given"; any other unknown number is invalid. */
function statusName(value: ResourceStatus, param = "status"): ResourceStatusName | undefined {
  if (value === ResourceStatus.UNSPECIFIED) return undefined;
  const name = RESOURCE_STATUS.nameOf(value);
  if (!name) throw errors.invalid("parameter_invalid", "Invalid status: must be one of active, paused or archived.", param);
  return name;
}

function toMessage(doc: AnsweredResource): MessageInitShape<typeof ResourceSchema> {
  return {
    id: doc._id,
    name: doc.name,
    status: RESOURCE_STATUS.valueOf(doc.status),
    metadata: doc.metadata.map((p) => ({ key: p.k, value: p.v })),
    created: BigInt(doc.created),
    livemode: doc.livemode,
  };
}

/** A page's resources: as messages, or (`as_json`, the gateway's reads) as the public objects' JSON text. */
function pageItems(docs: readonly AnsweredResource[], asJson: boolean): { resources: MessageInitShape<typeof ResourceSchema>[] } | { dataJson: string } {
  return asJson ? { dataJson: resourcesJson(docs) } : { resources: docs.map(toMessage) };
}

/**
 * The ResourceService RPCs (grpc/define-rpc.ts): domain validation, the presented key, then the store,
 * within the caller's deadline. Writes start once the key is confirmed; reads run alongside the check.
 */
export function resourceService(store: ResourceStore, faults: Faults, checkKey: PresentedKeyCheck): ServiceImplementation<typeof ResourceService> {
  return defineRpcs(ResourceService, checkKey, {
    createResource: rpc.write({
      // One insert (the resource with its event): under a key it commits with the key's record (one commit, not two writes).
      atomic: true,
      parse: (request) => ({ name: validateName(request.name), status: statusName(request.status) ?? "active", metadata: mergeMetadata([], request.metadata) }),
      async write(fields, { tenant, info, budget }) {
        const written = await store.create(tenant, fields, info, budget);
        // The fault point is the durable write: under a key, the commit of the create with its record.
        afterCommit(budget, () => faults.afterWrite("resource.create"));
        return written;
      },
      reply: ({ doc }) => ({ resource: toMessage(doc) }),
    }),

    getResource: rpc.read({
      load: ({ id }, { tenant, budget }) => store.get(tenant, id, budget),
      reply: (doc, { id }) => ({ resource: toMessage(found(doc, "resource", id)) }),
    }),

    updateResource: rpc.write({
      parse: (request) => {
        const name = request.name === undefined ? undefined : validateName(request.name);
        const status = statusName(request.status);
        const metadata = metadataUpdate(request.metadata, request.clearMetadata);
        return {
          id: request.id,
          change: { ...(name !== undefined ? { name } : {}), ...(status !== undefined ? { status } : {}), ...(metadata ? { metadata } : {}) },
        };
      },
      write: ({ id, change }, { tenant, info, budget }) => store.update(tenant, id, change, info, budget),
      reply: (doc, { id }) => ({ resource: toMessage(found(doc, "resource", id)) }),
    }),

    deleteResource: rpc.write({
      write: ({ id }, { tenant, info, budget }) => store.delete(tenant, id, info, budget),
      reply: (doc, { id }) => ({ id: found(doc, "resource", id)._id }),
    }),

    listResources: rpc.read({
      parse: (request) => ({ ...pageOf(request, "res", "resource"), filter: filterFromMessage(request.filter, "list"), asJson: request.asJson }),
      load: (query, { tenant, budget }) => store.list(tenant, query, budget),
      reply: (page, { asJson }) => ({ ...pageItems(page.items, asJson), hasMore: page.hasMore }),
    }),

    searchResources: rpc.read({
      parse: (request) => {
        const limit = limitOf(request.limit, SEARCH_LIMIT_DEFAULT);
        const parsed = parseSearchQuery(request.query);
        return { query: request.query, limit, after: pagePosition(request.page, request.query), parsed, asJson: request.asJson };
      },
      load: ({ parsed, limit, after }, { tenant, budget }) =>
        parsed.none ? Promise.resolve({ items: [], next: null }) : store.search(tenant, parsed.filter, { limit, after }, budget),
      reply: (page, { query, asJson }) => ({
        ...pageItems(page.items, asJson),
        hasMore: page.next !== null,
        nextPage: page.next === null ? "" : pageToken(page.next, query),
      }),
    }),
  });
}
