// The import-direction rule (docs/architecture.md, "What may import what"): inside each app's and package's src/,
// at every depth, the files and folders of one folder import each other without a cycle, so each of them can stand
// on a floor above everything it imports. Exits 1 naming each cycle with the imports that close it.
// Usage: node scripts/import-cycles.mjs [DIR ...] (default: every apps/*/src and packages/*/src).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), "..");
const SOURCE = /\.(ts|tsx|mts|mjs)$/;
const LEFT_OUT = /\.test\.(ts|tsx)$|\.d\.ts$/;
// Generated code (src/gen) is buf's, and the dashboard's rooms are checked once its restructuring lands.
const NOT_CHECKED = new Set(["apps/dashboard/src"]);
const SPECIFIER = /(?:^|[\s;])(?:import|export)\s(?:[^'";]*?\sfrom\s)?["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;

function sourceFiles(dir) {
  const files = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== "gen" && entry.name !== "node_modules") files.push(...sourceFiles(path));
    else if (entry.isFile() && SOURCE.test(entry.name) && !LEFT_OUT.test(entry.name)) files.push(path);
  }
  return files;
}

/** The file a relative specifier names: `./a.js` is `a.ts` (or `.tsx`), a folder its `index.ts`. */
function resolveSpecifier(from, specifier) {
  const bare = resolve(dirname(from), specifier).replace(/\.(js|mjs)$/, "");
  const candidates = [`${bare}.ts`, `${bare}.tsx`, `${bare}.mts`, `${bare}.mjs`, join(bare, "index.ts"), resolve(dirname(from), specifier)];
  return candidates.find((path) => existsSync(path) && statSync(path).isFile());
}

function importsOf(file) {
  const text = readFileSync(file, "utf8");
  const targets = new Set();
  for (const match of text.matchAll(SPECIFIER)) {
    const target = resolveSpecifier(file, match[1] ?? match[2]);
    if (target) targets.add(target);
  }
  return targets;
}

/** The child of `folder` a path lies in (a file, or a folder), or undefined when it lies outside. */
function childOf(folder, path) {
  const rest = relative(folder, path);
  if (rest.startsWith("..") || rest === "") return undefined;
  return rest.split("/")[0];
}

/** Strongly connected groups of more than one node (Tarjan), each a cycle of the graph. */
function cycles(nodes, edges) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  let next = 0;
  const visit = (node) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const to of edges.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node), low.get(to)));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node), index.get(to)));
    }
    if (low.get(node) === index.get(node)) {
      const group = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        group.push(member);
      } while (member !== node);
      if (group.length > 1) found.push(group);
    }
  };
  for (const node of nodes) if (!index.has(node)) visit(node);
  return found;
}

/** The shortest loop through the group's first member (breadth first), as the members in order. */
function shortestLoop(group, edges) {
  const members = new Set(group);
  const start = [...group].sort()[0];
  const cameFrom = new Map();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const to of edges.get(node) ?? []) {
      if (!members.has(to)) continue;
      if (to === start) {
        const loop = [node];
        while (loop[0] !== start) loop.unshift(cameFrom.get(loop[0]));
        return loop;
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, node);
        queue.push(to);
      }
    }
  }
  return [start];
}

/** Every cycle among the children of `folder` and, recursively, of its subfolders. */
function check(folder, imports, problems) {
  const children = new Set();
  const edges = new Map();
  const why = new Map();
  for (const [file, targets] of imports) {
    const from = childOf(folder, file);
    if (from === undefined) continue;
    children.add(from);
    for (const target of targets) {
      const to = childOf(folder, target);
      if (to === undefined || to === from) continue;
      if (!edges.has(from)) edges.set(from, new Set());
      edges.get(from).add(to);
      const key = `${from} -> ${to}`;
      if (!why.has(key)) why.set(key, []);
      why.get(key).push(`${relative(ROOT, file)} imports ${relative(ROOT, target)}`);
    }
  }
  for (const group of cycles(children, edges)) {
    const loop = shortestLoop(group, edges);
    const steps = loop.map((from, i) => {
      const to = loop[(i + 1) % loop.length];
      const [first, ...more] = why.get(`${from} -> ${to}`);
      return `${first}${more.length > 0 ? ` (and ${more.length} more)` : ""}`;
    });
    problems.push(`${relative(ROOT, folder)}/: ${loop.join(" -> ")} -> ${loop[0]}\n    ${steps.join("\n    ")}`);
  }
  for (const child of children) {
    const path = join(folder, child);
    if (statSync(path).isDirectory()) check(path, imports, problems);
  }
}

const every = () => ["apps", "packages"].flatMap((top) => readdirSync(join(ROOT, top)).map((name) => join(top, name, "src")));
const dirs = (process.argv.length > 2 ? process.argv.slice(2) : every().filter((dir) => !NOT_CHECKED.has(dir))).filter((dir) => existsSync(join(ROOT, dir)));
const problems = [];
for (const dir of dirs) {
  const root = join(ROOT, dir);
  const imports = new Map(sourceFiles(root).map((file) => [file, importsOf(file)]));
  check(root, imports, problems);
}
if (problems.length > 0) {
  console.error(`Imports that run in a circle (each folder's files and folders must import one way only):\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log(`import directions: no cycle in ${dirs.join(", ")}`);
