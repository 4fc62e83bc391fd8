// The webhook delivery toolkit (CONTRACT.md section 7, in ../shared/docs/): pure rules and one network
// call, free of storage and gRPC; the deliveries domain (webhook-deliveries/) and the endpoints kind use them.
export { addressPolicy, classifyAddress, type AddressPolicy, type AddressVerdict, type BlockedRange, type Embedding } from "./address-policy.js";
export { checkEndpointUrl, MAX_ENDPOINT_URL_LENGTH, type EndpointUrlCheck, type EndpointUrlProblem } from "./endpoint-url.js";
export {
  decryptSecret,
  encryptSecret,
  masterKey,
  needsReencryption,
  newMasterKeyText,
  parseMasterKey,
  SecretCryptoError,
  signingSchemeOf,
  type KeyScheme,
  type Keyring,
  type MasterKey,
  type SecretCryptoCode,
} from "./secret.js";
export {
  isEndpointSecret,
  newEndpointKeyPair,
  newEndpointSecret,
  PRIVATE_KEY_PREFIX,
  PUBLIC_KEY_PREFIX,
  publicKeyOf,
  SECRET_PREFIX,
  signatureHeader,
  verifyingKeyOf,
  type EndpointKeyPair,
} from "@rms/webhook-signing";
export { lookupPinnedTo, resolveAndPin, systemResolver, type Pin, type ResolvedAddress, type Resolver } from "./pinned-lookup.js";
export { parseRetryAfter } from "./retry-after.js";
export {
  deliver,
  DELIVERY_TIMEOUT_MS,
  RESPONSE_BODY_CAP_BYTES,
  WEBHOOK_USER_AGENT,
  type AttemptError,
  type DeliveryOptions,
  type DeliveryOutcome,
  type DeliveryRequest,
} from "./deliver.js";
export {
  afterAttempt,
  DEFAULT_RETRY_SCHEDULE,
  DISABLE_AFTER_FAILING_MS,
  JITTER_FRACTION,
  MAX_RETRY_AFTER_SECONDS,
  nextAttemptAtMs,
  parseRetrySchedule,
  RetryScheduleError,
  type DisableReason,
  type FailureStreak,
  type NextAttemptInput,
} from "./schedule.js";
