import type { KeyKind } from "@rms/proto";

/** Whose data a request acts on, from the verified key. */
export interface Tenant {
  readonly accountId: string;
  readonly livemode: boolean;
}

/** A verified key, as much of it as handlers need. Never the secret. */
export interface Principal {
  readonly keyId: string;
  readonly kind: KeyKind;
  readonly tenant: Tenant;
  readonly scopes: readonly string[];
  /** The key of a dashboard session (POST /v1/dashboard_sessions): its requests' `source` is `dashboard`. */
  readonly dashboardSession: boolean;
}
