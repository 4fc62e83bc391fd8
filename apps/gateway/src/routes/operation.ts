import type { CallOptions } from "@rms/proto";
import type { CoreClients } from "../core.js";
import type { Params } from "../http/body.js";
import type { Scope, Tenant } from "../http/auth.js";

/** What an operation gets: checked-in-order inputs, its tenant and core. */
export interface OperationContext {
  /** Query and body parameters (null-prototype; unknown ones not yet refused). */
  readonly params: Params;
  /** Path parameters such as `id`. */
  readonly path: Readonly<Record<string, string>>;
  readonly tenant: Tenant;
  readonly core: CoreClients;
  /** Metadata for every core call of this request (request id, idempotency key). */
  readonly call: CallOptions;
}

export interface OperationResult {
  readonly status: number;
  readonly body: unknown;
}

/** One public operation, described as data: the route table registers it. */
export interface Operation {
  readonly method: "GET" | "POST" | "DELETE";
  /** Express path, e.g. `/v1/resources/:id`. */
  readonly path: string;
  readonly scope: Scope;
  /** Every parameter name it accepts (query or body); any other is 400 parameter_unknown. The OpenAPI document is checked against it. */
  readonly params: readonly string[];
  /** One line for the API description. */
  readonly summary: string;
  handle(context: OperationContext): Promise<OperationResult>;
}
