import type { MessageInitShape } from "@bufbuild/protobuf";
import { RESOURCE_STATUS, type JobFilterSchema, type JobItemErrorSchema, type JobParamsSchema, type JobSchema } from "@rms/proto";
import type { MetadataPair } from "../resources/model.js";
import type { BulkDeleteParams, BulkUpdateParams, ImportParams, JobFilter, JobItemError, JobType } from "./model.js";
import type { LoadedJob } from "./store.js";

/** Stored jobs as rms.v1 messages: params back to their typed form, metadata pairs to entries. */

const entries = (pairs: readonly MetadataPair[] | undefined) => (pairs ?? []).map((p) => ({ key: p.k, value: p.v }));

function filterMessage(filter: JobFilter): MessageInitShape<typeof JobFilterSchema> {
  return {
    ids: filter.ids ?? [],
    ...(filter.status ? { status: RESOURCE_STATUS.valueOf(filter.status) } : {}),
    metadata: entries(filter.metadata),
    ...(filter.created?.gte !== undefined ? { createdGte: BigInt(filter.created.gte) } : {}),
    ...(filter.created?.lte !== undefined ? { createdLte: BigInt(filter.created.lte) } : {}),
  };
}

export function paramsMessage(type: JobType, params: LoadedJob["params"]): MessageInitShape<typeof JobParamsSchema> {
  switch (type) {
    case "resources.bulk_update": {
      const { filter, update } = params as BulkUpdateParams;
      return {
        kind: {
          case: "bulkUpdate",
          value: {
            filter: filterMessage(filter),
            update: {
              ...(update.status ? { status: RESOURCE_STATUS.valueOf(update.status) } : {}),
              metadata: update.metadata === "" ? [] : entries(update.metadata),
              clearMetadata: update.metadata === "",
            },
          },
        },
      };
    }
    case "resources.bulk_delete":
      return { kind: { case: "bulkDelete", value: { filter: filterMessage((params as BulkDeleteParams).filter) } } };
    case "resources.import":
      return {
        kind: {
          case: "importItems",
          value: {
            items: (params as ImportParams).items.map((item) => ({
              ...(item.name !== undefined ? { name: item.name } : {}),
              ...(item.status !== undefined ? { status: item.status } : {}),
              metadata: entries(item.metadata),
            })),
          },
        },
      };
  }
}

export function itemErrorMessage(error: JobItemError): MessageInitShape<typeof JobItemErrorSchema> {
  return {
    index: BigInt(error.index),
    ...(error.id !== null ? { id: error.id } : {}),
    code: error.code,
    ...(error.param !== null ? { param: error.param } : {}),
    message: error.message,
  };
}

export function jobMessage(doc: LoadedJob): MessageInitShape<typeof JobSchema> {
  const result = doc.result;
  const countName = result ? (["created", "updated", "deleted"] as const).find((name) => result[name] !== undefined) : undefined;
  return {
    id: doc._id,
    type: doc.type,
    status: doc.status,
    params: paramsMessage(doc.type, doc.params),
    progress: {
      ...(doc.progress.total !== null ? { total: BigInt(doc.progress.total) } : {}),
      processed: BigInt(doc.progress.processed),
      failed: BigInt(doc.progress.failed),
      skipped: BigInt(doc.progress.skipped),
    },
    ...(result ? { result: { countName: countName ?? "", count: BigInt((countName && result[countName]) ?? 0), errors: result.errors.map(itemErrorMessage) } } : {}),
    ...(doc.error ? { error: { code: doc.error.code, message: doc.error.message } } : {}),
    attempts: BigInt(doc.attempts),
    ...(doc.cancel_requested_at !== null ? { cancelRequestedAt: BigInt(doc.cancel_requested_at) } : {}),
    livemode: doc.livemode,
    created: BigInt(doc.created),
    ...(doc.started_at !== null ? { startedAt: BigInt(doc.started_at) } : {}),
    ...(doc.finished_at !== null ? { finishedAt: BigInt(doc.finished_at) } : {}),
  };
}
