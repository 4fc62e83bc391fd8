import { KeyKind } from "../gen/rms/v1/admin_pb.js";
import { ResourceStatus } from "../gen/rms/v1/resources_pb.js";
import { WebhookEndpointStatus } from "../gen/rms/v1/webhook_endpoints_pb.js";

/** A two-way map between an enum's public names and its wire values (UNSPECIFIED has no name). */
function nameMap<Name extends string, Value extends number>(entries: Record<Name, Value>) {
  const names = Object.keys(entries) as Name[];
  const byValue = new Map<number, Name>(names.map((name) => [entries[name], name]));
  return {
    names: names as readonly Name[],
    /** The wire value of a public name. */
    valueOf: (name: Name): Value => entries[name],
    /** The public name of a wire value; undefined for UNSPECIFIED or an unknown number. */
    nameOf: (value: number): Name | undefined => byValue.get(value),
    isName: (text: string): text is Name => Object.hasOwn(entries, text),
  };
}

/** Resource statuses as the API names them. */
export const RESOURCE_STATUS = nameMap({ active: ResourceStatus.ACTIVE, paused: ResourceStatus.PAUSED, archived: ResourceStatus.ARCHIVED });
export type ResourceStatusName = (typeof RESOURCE_STATUS.names)[number];

/** Key kinds as the API and the CLI name them. */
export const KEY_KIND = nameMap({ secret: KeyKind.SECRET, publishable: KeyKind.PUBLISHABLE, restricted: KeyKind.RESTRICTED });
export type KeyKindName = (typeof KEY_KIND.names)[number];

/** Webhook endpoint statuses as the API names them. */
export const WEBHOOK_ENDPOINT_STATUS = nameMap({ enabled: WebhookEndpointStatus.ENABLED, disabled: WebhookEndpointStatus.DISABLED });
export type WebhookEndpointStatusName = (typeof WEBHOOK_ENDPOINT_STATUS.names)[number];
