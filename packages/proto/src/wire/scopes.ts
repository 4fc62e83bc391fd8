/** Every scope a key can grant (CONTRACT.md section 4, in ../shared/docs/). */
export const SCOPES = ["resources:read", "resources:write", "jobs:read", "jobs:write", "webhooks:write", "events:read"] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
