import { RESOURCE_STATUS, RpcError } from "@rms/proto";
import type { MetadataPair, ResourceStatusName } from "../resources/model.js";
import { mergeMetadata, validateName } from "../resources/validation.js";
import type { ImportItem, JobItemError } from "./model.js";

/** An import item's resource fields once its rules hold. */
export interface ImportFields {
  name: string;
  status: ResourceStatusName;
  metadata: MetadataPair[];
}

export type ItemCheck = { ok: true; fields: ImportFields } | { ok: false; error: Omit<JobItemError, "index" | "id"> };

function failure(error: unknown): ItemCheck {
  if (error instanceof RpcError) return { ok: false, error: { code: error.code, param: error.param ?? null, message: error.message } };
  throw error;
}

/**
 * The rules of one import item, the same as a resource create's (name present, 1 to 200 code points;
 * status one of the three, default active; metadata keys and values, at most 50 keys). Used by the
 * runner per item: a failing item is counted failed with this error and the job goes on.
 */
export function importItemFields(item: ImportItem): ItemCheck {
  if (item.name === undefined) return { ok: false, error: { code: "parameter_missing", param: "name", message: "Missing required param: name." } };
  try {
    const name = validateName(item.name);
    let status: ResourceStatusName = "active";
    if (item.status !== undefined) {
      if (!RESOURCE_STATUS.isName(item.status))
        return { ok: false, error: { code: "parameter_invalid", param: "status", message: "Invalid status: must be one of active, paused or archived." } };
      status = item.status;
    }
    // As a resource create: a key with an empty value is simply not set.
    const metadata = mergeMetadata(
      [],
      (item.metadata ?? []).map((p) => ({ key: p.k, value: p.v })),
    );
    return { ok: true, fields: { name, status, metadata } };
  } catch (error) {
    return failure(error);
  }
}
