import type { Schemas } from "@rms/sdk";

/** What a file holds, in words: its name, or what its purpose says it is. */
export function fileLabel(file: Pick<Schemas["File"], "id" | "filename" | "purpose">): string {
  if (file.filename) return file.filename;
  return file.purpose === "resources_export" ? `the export ${file.id}` : file.purpose === "job_results" ? `the results ${file.id}` : file.id;
}
