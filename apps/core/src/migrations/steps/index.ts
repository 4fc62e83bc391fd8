import type { MigrationStep } from "../step.js";
import { step as retiredIndexes } from "./0001-retired-indexes.js";
import { step as idempotencyRecordsExpiry } from "./0002-idempotency-records-expiry.js";
import { step as gatewayIdempotencyAnswers } from "./0003-gateway-idempotency-answers.js";
import { step as partialExpiryIndexes } from "./0004-partial-expiry-indexes.js";
import { step as rateLimitTokensExpiry } from "./0005-rate-limit-tokens-expiry.js";
import { step as createAnswersInDocuments } from "./0006-create-answers-in-documents.js";
import { step as resourceNameFields } from "./0007-resource-name-fields.js";
import { step as fileNamesByType } from "./0008-file-names-by-type.js";

/**
 * Every migration step, in the order they run: one file per step in this folder, named by its id, and one line
 * here (docs/migrations.md, "Adding a step"). A step is never edited once released; a change is a new step.
 */
export const MIGRATION_STEPS: readonly MigrationStep[] = [
  retiredIndexes,
  idempotencyRecordsExpiry,
  gatewayIdempotencyAnswers,
  partialExpiryIndexes,
  rateLimitTokensExpiry,
  createAnswersInDocuments,
  resourceNameFields,
  fileNamesByType,
];
