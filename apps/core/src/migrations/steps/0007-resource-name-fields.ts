import { nameFields } from "../../resources/filter-query.js";
import { walkDocuments } from "../parts.js";
import type { MigrationStep } from "../step.js";

/**
 * Resources written before they carried the fields search reads a name by (`name_lower`, `name_prefixes`) get them,
 * as every write of a name has made them since; until then a search by name did not find them (only their next update
 * gave them the fields). Computed by the same function the writes use, so search reads exactly what it expects.
 */
export const step: MigrationStep = {
  id: "0007-resource-name-fields",
  release: "1.4.1",
  kind: "expand",
  summary: "gives resources without name_lower and name_prefixes the fields search finds a name by",
  parts: [
    walkDocuments<{ _id: string; name?: string }>({
      collection: "resources",
      where: { name_lower: { $exists: false } },
      what: "resources without the name fields search reads",
      read: ["name"],
      convert: (doc) => (typeof doc.name === "string" ? { $set: nameFields(doc.name) } : null),
    }),
  ],
};
