import { walkDocuments } from "../parts.js";
import type { MigrationStep } from "../step.js";

/**
 * The answer a keyed create once recorded on the document it made (`answer`: the fingerprint, the request id, the
 * headers and what the answer showed) is removed from resources, jobs and webhook endpoints: the key's record in core
 * holds every answer, no release since 1.4.0 reads or writes the field, and it is carried by every read of a
 * document made then. The documents stay; only the field goes.
 */
export const step: MigrationStep = {
  id: "0006-create-answers-in-documents",
  release: "1.4.1",
  kind: "expand",
  summary: "removes the answer keyed creates once recorded on resources, jobs and webhook endpoints (read by no release)",
  parts: ["resources", "jobs", "webhook_endpoints"].map((collection) =>
    walkDocuments({ collection, where: { answer: { $exists: true } }, what: "documents with a create's answer", update: { $unset: { answer: "" } } }),
  ),
};
