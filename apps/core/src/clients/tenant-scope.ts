import { RpcError, catalogueError, type CallContext } from "@rms/proto";
import type { Tenant } from "../caller.js";
import { mayActOn } from "./client.js";
import { clientOf } from "./guard.js";

/**
 * What a service's not-found answer calls the object a request names by `id` (its stores' `found(doc, kind, id)`),
 * by service: a refused tenant answers in the same words. A test holds each next to the real answer.
 */
const OBJECT_KINDS: Readonly<Record<string, string>> = {
  "rms.v1.ResourceService": "resource",
  "rms.v1.JobService": "job",
  "rms.v1.EventService": "event",
  "rms.v1.WebhookEndpointService": "webhook endpoint",
  "rms.v1.FileService": "file",
};

/**
 * A tenant outside the calling client's accounts or modes. On the wire it is exactly the `resource_missing` another
 * tenant's object gets, so a refusal tells nothing of what exists; core's log tells it apart (server.ts).
 */
export class TenantRefusal extends RpcError {
  constructor(method: string, tenant: Tenant, named: unknown) {
    const service = /^\/([^/]+)\//.exec(method)?.[1] ?? "";
    const kind = OBJECT_KINDS[service];
    const refusal =
      typeof named === "string" && kind !== undefined
        ? // The file service names uploads by `upl_` ids and quotes at most 64 characters of an id it cannot read.
          catalogueError(
            "resource_missing",
            `No such ${named.startsWith("upl_") && kind === "file" ? "upload" : kind}: '${kind === "file" ? named.slice(0, 64) : named}'`,
            "id",
          )
        : catalogueError("resource_missing", `No such account: '${tenant.account}'`, "tenant");
    super(refusal.grpcCode, { type: refusal.type, code: refusal.code, message: refusal.message, ...(refusal.param ? { param: refusal.param } : {}) });
    this.name = "TenantRefusal";
  }
}

/**
 * Refuses a tenant the calling client may not act on (its entry's accounts and modes; clients/client.ts) as if the
 * object it names, or the account, did not exist. `named`: the request's `id`, when it names one object. A call
 * without a table client (a server with no `authorize`, in unit tests) is not limited.
 */
export function refuseOutsideScope(context: CallContext, tenant: Tenant, named?: unknown): void {
  const client = clientOf(context);
  if (client && !mayActOn(client, tenant)) throw new TenantRefusal(context.method, tenant, named);
}
