/** `@rms/sdk`: the Resource Management Service's own client (docs/sdk.md). */
export { RMS, type Namespaces } from "./client.js";
export type { ClientOptions, RequestOptions } from "./options.js";
export type { RMSResponse, ResponseInfo } from "./response.js";
export type { ListCall, ListPage, SearchCall, SearchPage } from "./paging.js";
export {
  RMSAPIError,
  RMSAuthenticationError,
  RMSConnectionError,
  RMSError,
  type RMSErrorFields,
  RMSIdempotencyError,
  RMSInvalidRequestError,
  RMSPermissionError,
  RMSRateLimitError,
  WebhookVerificationError,
} from "./errors.js";
export { Webhooks, verify as verifyWebhook, WEBHOOK_TOLERANCE_SECONDS, type VerifyOptions, type WebhookHeaders } from "./webhooks.js";
export type { WebhookEvent } from "./gen/operations.js";
export { JobWaitTimeoutError, type WaitOptions } from "./jobs.js";
export type { FileCreateParams, FileInput, UploadOptions } from "./files/upload.js";
export { PART_BYTES, SINGLE_REQUEST_MAX_BYTES } from "./files/upload.js";
export type { FileContents } from "./files/download.js";
export {
  type EventStreamParams,
  type LiveStream,
  type ReconnectInfo,
  type RequestLogStreamParams,
  STREAM_IDLE_TIMEOUT_MS,
  type StreamOptions,
} from "./streams.js";
export type {
  AtMostOne,
  Body,
  Event,
  FileObject,
  Job,
  JobPreview,
  MultipartBody,
  OperationId,
  Query,
  RequestLog,
  Resource,
  Schemas,
  Upload,
  WebhookAttempt,
  WebhookEndpoint,
} from "./types.js";
export type { components, operations, paths } from "./gen/openapi.js";
