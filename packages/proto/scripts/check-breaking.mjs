// `buf breaking` against proto/ as it was in the previous commit, when there is one.
// (A first commit, a shallow clone or a previous commit without proto/ has nothing to compare with.)
import { execFileSync, spawnSync } from "node:child_process";

const root = new URL("../../../", import.meta.url).pathname;
const git = (...args) => spawnSync("git", args, { cwd: root, encoding: "utf8" });

const previous = git("rev-parse", "--verify", "-q", "HEAD~1");
if (previous.status !== 0 || git("cat-file", "-e", "HEAD~1:proto/rms").status !== 0) {
  console.log("buf breaking: no previous commit with proto/ to compare against; skipped");
  process.exit(0);
}
execFileSync("buf", ["breaking", ".", "--against", `.git#ref=${previous.stdout.trim()}`], { cwd: root, stdio: "inherit" });
console.log(`buf breaking: compatible with ${previous.stdout.trim().slice(0, 12)}`);
