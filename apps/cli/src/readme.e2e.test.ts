import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GRPCIO_TOOLS, pythonPackages } from "@rms/test-db/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "./paths.js";
import { freePort } from "./stack/processes.js";
import { startRms, stackEnv, type Ports, type RmsStart } from "./testutil/rms-start.js";

/*
 * The README's shell examples, run in order against a real stack (`rms start`, what `npm start` runs, on free ports
 * and a temporary data directory), as a new user pastes them into one terminal in the repository's directory.
 *
 * Each ```sh block is split into its commands (a command ends at a line outside quotes that does not end with `\`;
 * lines that are only a comment are skipped), and each command runs in bash, in the repository's directory, with the
 * stack's environment (RMS_DATA_DIR, CORE_ADDR, PORT, ... as the user's `npm start` had them) and every `export` run
 * before it. What a user would change before pasting is changed the same way here:
 *   - `localhost:8443` (and 127.0.0.1:8443) is the test stack's HTTPS port; `.data/` is its data directory;
 *   - a placeholder `<prefix>_...` (`sk_test_...`, `res_...`, `evt_...`, `we_...`, `job_...`, `acct_...`, `key_...`,
 *     `whsec_...`, any other) is the first value with that prefix in the latest answer that has one (the output of
 *     `npm start` counts as the first answer: it holds the key and the account), e.g. `export KEY=sk_test_...` sets
 *     the printed key, and `res_...` is the resource the example before answered with;
 *   - curl runs with `-sS` (no progress meter when not on a terminal) and reports its HTTP status to the test.
 * A command fails the test when it exits non-zero or an answer's status is 400 or above, unless its block is marked
 * `<!-- doc-test: may-fail (reason) -->` on the line before it, and when it answers an empty list or search page
 * (an earlier example took away what it would show), unless its block is marked
 * `<!-- doc-test: may-be-empty (reason) -->`. A block marked `<!-- doc-test: script (reason) -->` runs as one script (its
 * commands share shell variables, as in one terminal) that stops at its first failure. A block marked `<!-- doc-test: skip (reason) -->` is not run
 * (`npm start` itself, a receiver that runs until stopped): the test prints the list. A ```js block marked
 * `<!-- doc-test: node (reason) -->` is an ES module of the SDK's examples: it runs with node in the project the README
 * installs the SDK into (`$TMPDIR/my-app`, SDK_APP here), with the same substitutions and the exports before it; a
 * ```js block without that mark (the Stripe SDK notes, which tests of their own run) is not run. A block marked
 * `<!-- doc-test: python (reason) -->` runs with grpcio-tools on PYTHONPATH (installed once into the project's cache, as
 * the SDK trials' stripe-python is), and is skipped, its reason printed, where python3, pip or the package cannot be
 * had. A block of any language marked `<!-- doc-test: file (path) -->` is that file of the repository, byte for byte
 * (the examples the shell blocks run are the ones the reader sees). The stack runs with the
 * variables the README asks the reader to start it with (WEBHOOK_ALLOW_PRIVATE=true, for the webhook examples).
 * An example that needs a file writes it outside the repository (`$TMPDIR`, here a directory of the test's own): a
 * file the examples leave in the repository fails the test.
 */

/** What a block's marker allows: not running it, a failure, an empty list, one script; or what it needs (node, python). */
type Mark = "skip" | "may-fail" | "may-be-empty" | "script" | "node" | "python";

interface Block {
  readonly line: number;
  readonly commands: string[];
  readonly mark?: { kind: Mark; reason: string };
  /** A ```js block (marked `node`): one ES module, its whole text as the one command. */
  readonly module?: true;
}

const readme = readFileSync(join(repoRoot, "README.md"), "utf8");

type Quote = "'" | '"' | null;

/**
 * One line read as bash reads it, from the quote open at its start (from the line before, or none): where its
 * comment starts (`#` outside quotes, at the line's start or after a space; -1 for none), and the quote open at its
 * end (or at its comment).
 */
function scanLine(line: string, open: Quote): { comment: number; quote: Quote } {
  let quote = open;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote === "'") {
      if (c === "'") quote = null;
    } else if (c === "\\") i++;
    else if (quote === '"') {
      if (c === '"') quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "#" && (i === 0 || /\s/.test(line[i - 1]!))) return { comment: i, quote };
  }
  return { comment: -1, quote };
}

/** The commands of one block, split as bash would read them (quotes and `\` continuations). */
export function commandsOf(text: string): string[] {
  const commands: string[] = [];
  let current = "";
  let quote: Quote = null;
  for (const line of text.split("\n")) {
    if (quote === null && current === "" && /^\s*(#|$)/.test(line)) continue;
    current += (current === "" ? "" : "\n") + line;
    quote = scanLine(line, quote).quote;
    if (quote === null && !/\\\s*$/.test(line.replace(/\s#.*$/, ""))) {
      commands.push(current);
      current = "";
    }
  }
  if (current.trim() !== "") commands.push(current);
  return commands;
}

/** The command without its comments (`#` outside quotes, at a line's start or after a space, to the line's end). */
export function withoutComments(command: string): string {
  let quote: Quote = null;
  return command
    .split("\n")
    .map((line) => {
      const scanned = scanLine(line, quote);
      quote = scanned.quote;
      return scanned.comment === -1 ? line : line.slice(0, scanned.comment).trimEnd();
    })
    .join("\n");
}

/** Every ```sh block of the README, and every ```js block marked `node`, with its marker. */
export function blocksOf(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const fence = lines[i]!.trim();
    if (fence !== "```sh" && fence !== "```js") continue;
    let end = i + 1;
    while (end < lines.length && lines[end]!.trim() !== "```") end++;
    const before =
      lines
        .slice(0, i)
        .reverse()
        .find((line) => line.trim() !== "") ?? "";
    const marker = /^<!-- doc-test: (skip|may-fail|may-be-empty|script|node|python) \((.+)\) -->$/.exec(before.trim());
    const mark = marker ? { mark: { kind: marker[1] as Mark, reason: marker[2]! } } : {};
    const text = lines.slice(i + 1, end).join("\n");
    if (fence === "```js") {
      if (marker?.[1] === "node") blocks.push({ line: i + 1, commands: [text], module: true, ...mark });
    } else blocks.push({ line: i + 1, commands: commandsOf(text), ...mark });
    i = end;
  }
  return blocks;
}

/** Every fenced block marked `<!-- doc-test: file (path) -->`, whatever its language: the path and the block's text. */
export function fileBlocksOf(markdown: string): { line: number; path: string; text: string }[] {
  const found: { line: number; path: string; text: string }[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const path = /^<!-- doc-test: file \((.+)\) -->$/.exec(lines[i]!.trim())?.[1];
    if (path === undefined) continue;
    let open = i + 1;
    while (open < lines.length && !lines[open]!.startsWith("```")) open++;
    let close = open + 1;
    while (close < lines.length && lines[close]!.trim() !== "```") close++;
    found.push({ line: open + 1, path, text: `${lines.slice(open + 1, close).join("\n")}\n` });
    i = close;
  }
  return found;
}

const STATUS = "__doc_test_status__:";
/** curl as the examples call it, telling the test each answer's status. */
// The status goes to stderr (`%{stderr}`), so an answer piped or captured (`$(curl ... | field id)`) stays the answer.
const CURL = `curl() { command curl -sS --max-time 60 -w '%{stderr}\\n${STATUS}%{http_code}\\n' "$@"; }`;

/** Where the README installs the SDK (`"${TMPDIR:-/tmp}/my-app"`): its ```js examples run there. */
const SDK_APP = "my-app";

let stack: RmsStart | undefined;
const dataDir = mkdtempSync(join(tmpdir(), "rms-readme-"));
let env: Record<string, string | undefined>;
let ports: Ports;

beforeAll(async () => {
  ports = { https: await freePort(), http: await freePort(), core: await freePort() };
  env = {
    ...stackEnv(ports, dataDir),
    RMS_GATEWAY_TOKEN: "",
    WEBHOOK_ALLOW_PRIVATE: "true",
    TMPDIR: mkdtempSync(join(tmpdir(), "rms-readme-tmp-")),
  };
  await startRms(env, { cwd: repoRoot, started: (started) => (stack = started) });
}, 150_000);

afterAll(async () => {
  if (stack && stack.child.exitCode === null) {
    stack.child.kill("SIGTERM");
    await stack.exited;
  }
  rmSync(dataDir, { recursive: true, force: true });
  if (env?.["TMPDIR"]) rmSync(env["TMPDIR"], { recursive: true, force: true });
});

/** What `git status` shows of the repository: files added or changed and not ignored. */
function repositoryChanges(): Promise<Set<string>> {
  return new Promise((resolve) => {
    const git = spawn("git", ["status", "--porcelain", "--untracked-files=all"], { cwd: repoRoot, stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    git.stdout!.on("data", (d) => (out += d));
    git.once("close", () => resolve(new Set(out.split("\n").filter(Boolean))));
  });
}

/**
 * Runs one command in bash with the stack's environment, in a process group of its own: once bash exits, anything it
 * left running in the background (an unmarked receiver `... &`) is stopped with its group, so it cannot hold the test.
 */
function bash(script: string, withEnv: Record<string, string | undefined> = env): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const shell = spawn("bash", ["-c", script], { cwd: repoRoot, env: withEnv, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    shell.stdout!.on("data", (d) => (out += d));
    shell.stderr!.on("data", (d) => (out += d));
    const group = (signal: NodeJS.Signals) => {
      try {
        process.kill(-shell.pid!, signal);
      } catch {
        // the group is gone already
      }
    };
    const timer = setTimeout(() => group("SIGKILL"), 120_000);
    let exitCode = 1;
    shell.once("exit", (code, signal) => {
      exitCode = code ?? (signal ? 128 : 1);
      group("SIGTERM");
    });
    // Once bash and whatever it left are gone, the pipes close with everything written read.
    shell.once("close", () => {
      clearTimeout(timer);
      resolve({ code: exitCode, out });
    });
  });
}

describe("the README's shell examples", () => {
  it("say where the ports are introduced that a key sent over plain HTTP is revoked, as the ready line does", () => {
    const tryIt = readme.slice(readme.indexOf("## Try it"));
    expect(tryIt.slice(0, tryIt.indexOf("```"))).toMatch(/plain HTTP[\s\S]*a key sent there is revoked/);
    expect(stack!.output()).toMatch(/rms: ready: .*rejecting: a key sent there is revoked/);
  });

  it("run in order, as a new user pastes them, against a real stack", async () => {
    const blocks = blocksOf(readme);
    expect(blocks.length).toBeGreaterThan(5);
    // The README's examples are curl commands: without curl they cannot run, and that is said plainly.
    expect((await bash("command -v curl")).code, "the README's examples need curl on PATH").toBe(0);
    const before = await repositoryChanges();
    const answers: string[] = [stack!.output()];
    const exports: string[] = [];
    const skipped: string[] = [];
    const failures: string[] = [];
    let ran = 0;
    const latestValue = (prefix: string): string | undefined => {
      // A whole value: a JSON string, a word of a line (ids are letters and digits, secrets and keys base64).
      const token = new RegExp(`(?<=["'\\s=:]|^)${prefix.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}[0-9A-Za-z+/=]{6,}(?=["'\\s,]|$)`, "m");
      for (const answer of [...answers].reverse()) {
        const found = token.exec(answer)?.[0];
        if (found) return found;
      }
      return undefined;
    };
    // grpcio-tools for the blocks that need it, installed on first need.
    let python: { path: string } | { unavailable: string } | undefined;
    for (const block of blocks) {
      if (block.mark?.kind === "skip") {
        skipped.push(`README.md:${block.line} (${block.mark.reason}): ${block.commands[0]?.split("\n")[0]}`);
        continue;
      }
      let blockEnv = env;
      if (block.mark?.kind === "python") {
        python ??= await pythonPackages(GRPCIO_TOOLS);
        if ("unavailable" in python) {
          skipped.push(`README.md:${block.line} (${python.unavailable}): ${block.commands[0]?.split("\n")[0]}`);
          continue;
        }
        blockEnv = { ...env, PYTHONPATH: python.path };
      }
      // A `script` block's commands share shell variables and functions, as in one terminal: they run as one script
      // that stops at the first failure.
      const commands = block.mark?.kind === "script" ? [["set -eo pipefail", ...block.commands].join("\n")] : block.commands;
      for (const command of commands) {
        const unresolved: string[] = [];
        // Comments are for the reader (an answer's shape, `# "public_key":"whpk_..."`): bash ignores them, so does this.
        const pasted = (block.module ? command : withoutComments(command))
          .replace(/\b(localhost|127\.0\.0\.1):8443\b/g, `$1:${ports.https}`)
          .replace(/(^|[\s='"])\.data\//g, `$1${dataDir}/`)
          .replace(/\b([a-z][a-z0-9]*_(?:test_|live_)?)\.\.\./g, (all, prefix: string) => {
            const value = latestValue(prefix);
            if (value === undefined) unresolved.push(all);
            return value ?? all;
          });
        const where = `README.md:${block.line}: ${command.split("\n")[0]}`;
        if (unresolved.length > 0) {
          failures.push(`${where}: no earlier answer holds a value for ${unresolved.join(", ")}`);
          continue;
        }
        // An SDK example is saved as a module in the project the README installed the SDK into, and run there.
        let script = pasted;
        if (block.module) {
          const file = join(env["TMPDIR"]!, SDK_APP, `readme-${block.line}.mjs`);
          writeFileSync(file, pasted);
          script = `cd "$TMPDIR/${SDK_APP}" && node ${JSON.stringify(file)}`;
        }
        const { code, out } = await bash([...exports, CURL, script].join("\n"), blockEnv);
        ran++;
        const statuses = [...out.matchAll(new RegExp(`${STATUS}(\\d+)`, "g"))].map((m) => Number(m[1]));
        const answer = out.replace(new RegExp(`\\n?${STATUS}\\d+\\n?`, "g"), "\n");
        answers.push(answer);
        if (/^\s*export\s/.test(pasted)) exports.push(pasted);
        const refused = statuses.filter((status) => status >= 400 || status === 0);
        if ((code !== 0 || refused.length > 0) && block.mark?.kind !== "may-fail") {
          failures.push(`${where}: exit ${code}, statuses ${statuses.join(" ")}:\n${answer.slice(0, 1000)}`);
        }
        // An example that lists or searches shows something: an empty page means an example before it took away what
        // it would show (as a JSON update once cleared the metadata the next list filtered on).
        if (/"object":\s*"(list|search_result)"[\s\S]*"data":\s*\[\s*\]/.test(answer) && block.mark?.kind !== "may-be-empty") {
          failures.push(`${where}: an empty list:\n${answer.slice(0, 500)}`);
        }
      }
    }
    console.log(`README doc test: ran ${ran} commands; skipped ${skipped.length} blocks:\n  ${skipped.join("\n  ")}`);
    const left = [...(await repositoryChanges())].filter((line) => !before.has(line));
    if (left.length > 0) failures.push(`the examples left files in the repository (write them under $TMPDIR): ${left.join(", ")}`);
    expect(failures).toEqual([]);
    // Every marker says why.
    for (const block of blocks) if (block.mark) expect(block.mark.reason.trim()).not.toBe("");
  }, 300_000);
});

describe("which blocks run", () => {
  it("every sh block, and the js blocks marked node (whole, as one module)", () => {
    const blocks = blocksOf(
      "```sh\necho a\n```\n\n<!-- sdk-trial: x -->\n```js\nnot run\n```\n\n<!-- doc-test: node (an SDK example) -->\n```js\nconst a = " +
        "1;\nconsole.log(a);\n```\n",
    );
    expect(blocks.map((b) => [b.line, b.commands, b.mark?.kind, b.module])).toEqual([
      [1, ["echo a"], undefined, undefined],
      [11, ["const a = 1;\nconsole.log(a);"], "node", true],
    ]);
  });
});

describe("the README's example files", () => {
  it("are shown as they are in the repository", () => {
    const shown = fileBlocksOf(readme);
    expect(shown.map((block) => block.path)).toEqual(expect.arrayContaining(["examples/internal-service/billing.ts", "examples/internal-service/billing.py"]));
    for (const block of shown) expect(block.text, `README.md:${block.line} shows ${block.path}`).toBe(readFileSync(join(repoRoot, block.path), "utf8"));
  });
});

describe("splitting a block into commands", () => {
  it("follows quotes, continuations and comments", () => {
    expect(commandsOf("a \\\n  -d x   # note\n#  an answer\nb 'one\ntwo' c\necho \"x # y\"")).toEqual([
      "a \\\n  -d x   # note",
      "b 'one\ntwo' c",
      'echo "x # y"',
    ]);
    expect(withoutComments('a \\\n  -d x   # "id":"res_..."\necho "x # y" # z')).toBe('a \\\n  -d x\necho "x # y"');
  });
});
