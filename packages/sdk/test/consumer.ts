// Test-only: an integrator's project made the way the README says, in an empty directory outside the repository:
// the SDK's packed tarball installed with npm, nothing of the workspace present, scripts run with the machine's own
// Node (the oldest the package promises, 20, where the machine has it).
import { execFile, spawn } from "node:child_process";
import { accessSync, constants, cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export const repoRoot = new URL("../../../", import.meta.url).pathname.replace(/\/$/, "");
const testDir = new URL(".", import.meta.url).pathname;

/** npm as the test runs it (`npm test` sets npm_execpath), else the one on PATH. */
function npm(args: readonly string[], cwd: string) {
  const npmCli = process.env["npm_execpath"];
  const [command, ...rest] = npmCli && /npm-cli\.js$/.test(npmCli) ? [process.execPath, npmCli, ...args] : ["npm", ...args];
  return run(command!, rest, { cwd, maxBuffer: 16 * 1024 * 1024 });
}

/** The machine's own `node` (not the project's Node 24 of node_modules/.bin), when it is Node 20 or newer. */
export async function machineNode(): Promise<{ path: string; version: string }> {
  for (const dir of (process.env["PATH"] ?? "").split(delimiter)) {
    if (dir === "" || dir.includes("node_modules")) continue;
    const candidate = join(dir, "node");
    try {
      accessSync(candidate, constants.X_OK);
    } catch {
      continue;
    }
    const version = (await run(candidate, ["--version"])).stdout.trim();
    if (Number(/^v(\d+)/.exec(version)?.[1]) >= 20) return { path: candidate, version };
  }
  return { path: process.execPath, version: process.version };
}

export interface Consumer {
  readonly dir: string;
  readonly tarball: string;
  /** Runs `script` of test/consumer/ with node in the project; its last output line parsed. */
  script(name: string, env: Record<string, string>, args?: readonly string[]): Promise<Record<string, unknown>>;
  /** `tsc` (the repository's TypeScript) on files of test/consumer-types/, in the project: exit code and output. */
  typeCheck(files: readonly string[]): Promise<{ code: number; output: string }>;
  remove(): void;
}

export async function makeConsumer(): Promise<Consumer & { installed: string[]; node: { path: string; version: string } }> {
  const packDir = mkdtempSync(join(tmpdir(), "rms-sdk-pack-"));
  const dir = mkdtempSync(join(tmpdir(), "rms-sdk-consumer-"));
  if (dir.startsWith(repoRoot)) throw new Error(`the consumer's directory ${dir} is inside the repository`);
  await npm(["pack", "-w", "@rms/sdk", "--pack-destination", packDir], repoRoot);
  const tarball = join(packDir, readdirSync(packDir).find((f) => f.endsWith(".tgz"))!);
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ name: "sdk-consumer", private: true, type: "module" }, null, 2)}\n`);
  await npm(["install", tarball, "--no-audit", "--no-fund", "--prefer-offline"], dir);
  cpSync(join(testDir, "consumer"), dir, { recursive: true });
  cpSync(join(testDir, "consumer-types"), dir, { recursive: true });
  const installed = readdirSync(join(dir, "node_modules"), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name === "package.json" && !entry.parentPath.includes(join("node_modules", "@rms", "sdk", "")))
    .map((entry) => entry.parentPath);
  const node = await machineNode();
  return {
    dir,
    tarball,
    installed,
    node,
    script(name, env, args = []) {
      return new Promise((resolve, reject) => {
        const child = spawn(node.path, [name, ...args], { cwd: dir, env: { PATH: process.env["PATH"] ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        let err = "";
        child.stdout.on("data", (d) => (out += d));
        child.stderr.on("data", (d) => (err += d));
        child.once("close", (code) => {
          const last = out.trim().split("\n").at(-1) ?? "";
          if (code !== 0) return reject(new Error(`${name} exited ${code}:\n${err}\n${out}`));
          try {
            resolve(JSON.parse(last) as Record<string, unknown>);
          } catch {
            reject(new Error(`${name} reported no JSON:\n${out}\n${err}`));
          }
        });
      });
    },
    async typeCheck(files) {
      // The consumer's own tsconfig.json (strict, no skipLibCheck, no Node types), for these files only.
      writeFileSync(join(dir, "tsconfig.check.json"), JSON.stringify({ extends: "./tsconfig.json", files }));
      const tsc = join(repoRoot, "node_modules", ".bin", "tsc");
      try {
        const { stdout } = await run(tsc, ["-p", "tsconfig.check.json", "--pretty", "false"], { cwd: dir });
        return { code: 0, output: stdout };
      } catch (error) {
        const failed = error as { code?: number; stdout?: string; stderr?: string };
        return { code: typeof failed.code === "number" ? failed.code : 1, output: `${failed.stdout ?? ""}${failed.stderr ?? ""}` };
      }
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
      rmSync(packDir, { recursive: true, force: true });
    },
  };
}
