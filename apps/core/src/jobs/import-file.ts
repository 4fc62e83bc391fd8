import { RpcError } from "@rms/proto";
import type { Tenant } from "../caller.js";
import { errors } from "../errors.js";
import type { JobFiles } from "./files.js";
import type { RowFormat } from "./rows/model.js";

/**
 * The file an import names, checked before the 201 (CONTRACT.md section 11): the tenant's (a file of another
 * account or mode is no such file), not expired, of purpose `resources_import`. Every refusal is 400
 * `parameter_invalid` on `params[file]`, as for any param naming something that cannot be used.
 */
export async function importFileOf(files: JobFiles, tenant: Tenant, id: string): Promise<{ id: string; type: RowFormat }> {
  try {
    return await files.importFile(tenant, id, "params[file]");
  } catch (error) {
    if (error instanceof RpcError && error.code === "resource_missing")
      throw errors.invalid("parameter_invalid", `Invalid params[file]: no such file: '${id}'.`, "params[file]");
    if (error instanceof RpcError && error.code === "parameter_invalid") {
      throw errors.invalid("parameter_invalid", `Invalid params[file]: '${id}' is not a file of purpose resources_import.`, "params[file]");
    }
    throw error;
  }
}
