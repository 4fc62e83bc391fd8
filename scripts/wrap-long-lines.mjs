// Wraps what biome's formatter leaves past the line width (it wraps code, never a comment or a string): a comment is
// rewrapped into lines of WRAP_AT characters, a string literal split into parts joined with `+`, and the files are
// left for `biome format --write` to lay out. Lines it cannot split safely (a regular expression, a JSX attribute, a
// trailing comment, a string with no space past its first WRAP_AT characters) are listed for a hand edit.
// Usage: node scripts/wrap-long-lines.mjs [--width 160] [FILE ...] (default: the files `git ls-files apps packages`
// names, generated code aside).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), "..");
const args = process.argv.slice(2);
const widthAt = args.indexOf("--width");
const WIDTH = widthAt >= 0 ? Number(args.splice(widthAt, 2)[1]) : 160;
// Comments are rewrapped to the width the hand-written ones keep.
const WRAP_AT = Math.min(WIDTH, 120);
const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;
const NOT_CHECKED = [/\/gen\//, /\/descriptor-set\.ts$/];

const length = (text) => [...text].length;

/** Words of `text` laid into lines of at most `room` characters (a longer word stays whole on its own line). */
function lay(text, room) {
  const lines = [];
  let line = "";
  for (const word of text.split(/ +/).filter(Boolean)) {
    if (line !== "" && length(line) + 1 + length(word) > room) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  if (line !== "") lines.push(line);
  return lines;
}

/** A comment line rewrapped (`// ...`, ` * ...`, or a one-line `/** ... *\/` opened into a block), or undefined. */
function wrapComment(line) {
  let match = /^(\s*)\/\/ ?(.*)$/.exec(line);
  if (match) {
    const [, indent, text] = match;
    return lay(text, WRAP_AT - length(indent) - 3).map((part) => `${indent}// ${part}`);
  }
  match = /^(\s*)\/\*\*\s*(.*?)\s*\*\/\s*$/.exec(line);
  if (match) {
    const [, indent, text] = match;
    return [`${indent}/**`, ...lay(text, WRAP_AT - length(indent) - 3).map((part) => `${indent} * ${part}`), `${indent} */`];
  }
  match = /^(\s*)\* ?(.*)$/.exec(line);
  if (match && !match[2].endsWith("*/")) {
    const [, indent, text] = match;
    return lay(text, WRAP_AT - length(indent) - 2).map((part) => `${indent}* ${part}`);
  }
  return undefined;
}

// TypeScript's own parser finds the literals (the workspace's typescript is the native compiler, without a JS API;
// @bufbuild/protoplugin brings the JS one).
const ts = createRequire(resolve(ROOT, "node_modules/@bufbuild/protoplugin/package.json"))("typescript");

/**
 * The string literals a line may be split in: strings and templates that begin and end on one line, each with the
 * ranges of its text a split may fall in (a template's text outside its `${...}`), and the multi-line ones' spans,
 * inside which no line is touched.
 */
function literalsOf(path, text) {
  const kind = path.endsWith(".tsx") ? ts.ScriptKind.TSX : path.endsWith("js") ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, kind);
  const splittable = [];
  const multiLine = [];
  const lineOf = (at) => file.getLineAndCharacterOfPosition(at).line;
  const visit = (node) => {
    const isString = ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node);
    if (isString || ts.isTemplateExpression(node)) {
      const start = node.getStart(file);
      const parent = node.parent;
      const fixed =
        ts.isLiteralTypeNode(parent) ||
        ts.isImportDeclaration(parent) ||
        ts.isExportDeclaration(parent) ||
        ts.isExternalModuleReference(parent) ||
        ts.isJsxAttribute(parent) ||
        ts.isTaggedTemplateExpression(parent) ||
        ts.isCaseClause(parent) ||
        (parent.name === node && !ts.isCallExpression(parent));
      if (lineOf(start) !== lineOf(node.end)) multiLine.push([start, node.end]);
      else if (!fixed) {
        const ranges = isString
          ? [[start + 1, node.end - 1]]
          : [
              [start + 1, node.head.end - 2],
              ...node.templateSpans.map((span) => [span.literal.getStart(file) + 1, span.literal.end - (ts.isTemplateTail(span.literal) ? 1 : 2)]),
            ];
        splittable.push({ start, end: node.end, quote: text[start], ranges });
      }
      if (isString) return;
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return { splittable, multiLine };
}

/**
 * The line (at `offset` in its file) with its longest literal split into parts that fit, joined with `+`, or
 * undefined. A part ends after a space, so the words stay whole.
 */
function splitString(line, offset, literals) {
  const inLine = literals.splittable.filter((l) => l.start >= offset && l.end <= offset + line.length && l.end - l.start > 20);
  if (inLine.length === 0) return undefined;
  const literal = inLine.reduce((a, b) => (b.end - b.start > a.end - a.start ? b : a));
  const start = literal.start - offset;
  const end = literal.end - offset;
  const allowed = (at) => literal.ranges.some(([from, to]) => offset + at >= from && offset + at < to);
  const indent = /^\s*/.exec(line)[0];
  const tail = line.slice(end);
  const cuts = [];
  let from = start;
  let lead = start;
  while (lead + (end - from) + 2 + length(tail) > WIDTH) {
    let at = -1;
    for (let i = Math.min(end - 2, from + WIDTH - 10 - lead); i > from + 20; i--) {
      if (line[i] === " " && line[i - 1] !== "\\" && allowed(i)) {
        at = i;
        break;
      }
    }
    if (at < 0) break;
    cuts.push(at + 1);
    from = at + 1;
    lead = length(indent) + 3;
  }
  if (cuts.length === 0) return undefined;
  let out = line.slice(0, start);
  let last = start;
  for (const cut of cuts) {
    out += `${line.slice(last, cut)}${literal.quote} +\n${indent}  ${literal.quote}`;
    last = cut;
  }
  return [`${out}${line.slice(last)}`];
}

const files =
  args.length > 0
    ? args
    : execFileSync("git", ["ls-files", "apps", "packages"], { cwd: ROOT, encoding: "utf8" })
        .split("\n")
        .filter((path) => SOURCE.test(path) && !NOT_CHECKED.some((pattern) => pattern.test(path)));
const byHand = [];
let changed = 0;
for (const path of files) {
  const full = resolve(ROOT, path);
  const text = readFileSync(full, "utf8");
  const lines = text.split("\n");
  if (!lines.some((line) => length(line) > WIDTH)) continue;
  const literals = literalsOf(path, text);
  let touched = false;
  let offset = 0;
  const out = lines.flatMap((line, index) => {
    const at = offset;
    offset += line.length + 1;
    if (length(line) <= WIDTH) return [line];
    const first = at + line.length - line.trimStart().length;
    const inTemplate = literals.multiLine.some(([from, to]) => first > from && first < to);
    const wrapped = inTemplate ? undefined : (wrapComment(line) ?? splitString(line, at, literals));
    if (wrapped === undefined || wrapped.some((part) => part.split("\n").some((piece) => length(piece) > WIDTH))) {
      byHand.push(`${path}:${index + 1} (${length(line)})`);
      if (wrapped === undefined) return [line];
    }
    touched = true;
    return wrapped;
  });
  if (touched) {
    writeFileSync(full, out.join("\n"));
    changed++;
  }
}
console.log(`wrap-long-lines: ${changed} files changed`);
if (byHand.length > 0) console.log(`Left for a hand edit (or still long after wrapping):\n  ${byHand.join("\n  ")}`);
