import { EVENT_TYPES, RESOURCE_STATUS } from "@rms/proto/vocabulary";

/**
 * The API's names the dashboard offers as choices (scopes, event types, job types, statuses), read from the domains'
 * vocabularies in @rms/proto: the lists core and the gateway enforce, so a name a domain adds is offered by every page
 * that lists its kind without a copy here to keep in step (`vocabulary.test.tsx` holds the pages to it).
 */
export {
  ATTEMPT_STATUSES,
  EVENT_TYPES,
  type EventType,
  FILE_PURPOSES,
  JOB_STATUSES,
  type JobStatus,
  JOB_TYPES,
  SCOPES,
  type Scope,
} from "@rms/proto/vocabulary";

export const RESOURCE_STATUSES = RESOURCE_STATUS.names;
export type ResourceStatus = (typeof RESOURCE_STATUSES)[number];

/** The events filter's prefixes (`resource.*`): one per domain that records more than one type. */
export const EVENT_TYPE_PREFIXES: readonly string[] = [...new Set(EVENT_TYPES.map((type) => type.split(".")[0]!))]
  .filter((domain) => EVENT_TYPES.filter((type) => type.startsWith(`${domain}.`)).length > 1)
  .map((domain) => `${domain}.*`);
