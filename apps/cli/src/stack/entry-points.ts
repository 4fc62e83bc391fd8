import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../paths.js";

/** The process kinds the launcher and the tests start, as the image's entry point names them. */
export const PROCESS_KINDS = ["gateway", "core", "worker"] as const;
export type ProcessKind = (typeof PROCESS_KINDS)[number];

/** deploy/image/processes.json: each command of the image and the script it runs, relative to the repository root. */
export const PROCESSES_FILE = join(repoRoot, "deploy", "image", "processes.json");

/** The whole table, read from the one file the image's entry point reads too. */
export function processTable(): Readonly<Record<string, string>> {
  return JSON.parse(readFileSync(PROCESSES_FILE, "utf8")) as Record<string, string>;
}

const table = processTable();

/** The script of a process kind, as an absolute path: what `npm start`, the tests and the container image run. */
export function entryPoint(kind: ProcessKind): string {
  const script = table[kind];
  if (!script) throw new Error(`${PROCESSES_FILE} names no script for ${kind}`);
  return join(repoRoot, script);
}
