#!/usr/bin/env node
// The image's entry point: `gateway`, `core`, `worker`, `rms <args>` or `probe <check>`. Each command runs the script
// processes.json names for it (the list the development launcher and the tests start from, so the image runs exactly
// what they run), in this same Node.js process: it stays PID 1 and gets SIGTERM itself, with its own handlers.
import { readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = new URL("../../", import.meta.url);
const processes = JSON.parse(readFileSync(new URL("processes.json", import.meta.url), "utf8"));
const [command, ...args] = process.argv.slice(2);

if (!command || !Object.hasOwn(processes, command)) {
  process.stderr.write(`rms-entrypoint: ${command ? `unknown command ${command}` : "no command"}; one of: ${Object.keys(processes).join(", ")}\n`);
  process.exit(64);
}
const script = fileURLToPath(new URL(processes[command], root));
// The script sees the argv it would see when started as `node <script> <args>`.
process.argv = [process.argv[0], script, ...args];
await import(pathToFileURL(script).href);
