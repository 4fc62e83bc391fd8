import { EVENT_TYPES, RESOURCE_STATUS, WEBHOOK_ENDPOINT_STATUS } from "@rms/proto/vocabulary";

/**
 * The API's names the dashboard offers as choices (scopes, event types, job types, statuses), read from the domains'
 * vocabularies in @rms/proto: the lists core and the gateway enforce, so a name a domain adds is offered by every page
 * that lists its kind without a copy here to keep in step (`vocabulary.test.ts` holds the pages to it).
 */
export {
  ATTEMPT_STATUSES,
  type AttemptStatus,
  EVENT_TYPES,
  type EventType,
  FILE_PURPOSES,
  type FilePurpose,
  JOB_STATUSES,
  type JobStatus,
  JOB_TYPES,
  type JobType,
  SCOPES,
  type Scope,
} from "@rms/proto/vocabulary";

export const RESOURCE_STATUSES = RESOURCE_STATUS.names;
export type ResourceStatus = (typeof RESOURCE_STATUSES)[number];

export const ENDPOINT_STATUSES = WEBHOOK_ENDPOINT_STATUS.names;

/** The events filter's prefixes (`resource.*`): one per domain that records more than one type. */
export const EVENT_TYPE_PREFIXES: readonly string[] = [...new Set(EVENT_TYPES.map((type) => type.split(".")[0]!))]
  .filter((domain) => EVENT_TYPES.filter((type) => type.startsWith(`${domain}.`)).length > 1)
  .map((domain) => `${domain}.*`);
