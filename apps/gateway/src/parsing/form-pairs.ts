import { ApiError } from "../errors.js";

/** `%` followed by anything but two hex digits. */
const BAD_ESCAPE = /%(?![0-9a-fA-F]{2})/;

/** Decodes one form component strictly: a malformed %-escape or bytes that are not UTF-8 are refused, never kept or replaced. */
export function decodeFormComponent(component: string): string {
  const plus = component.replace(/\+/g, " ");
  if (BAD_ESCAPE.test(plus)) throw new ApiError("parameter_invalid", "The parameters contain a malformed %-escape.");
  let decoded: string;
  try {
    decoded = decodeURIComponent(plus);
  } catch {
    throw new ApiError("parameter_invalid", "The parameters are not valid UTF-8 once %-decoded.");
  }
  return decoded;
}

/** `a[b][]` as its path: ["a", "b", "[]"]; the rest after the last bracket pair, if any, stays in the last segment. */
function pathOf(key: string): string[] {
  const root = /^[^[]*/.exec(key)![0];
  const segments = [...key.slice(root.length).matchAll(/\[([^[\]]*)\]/g)].map((m) => (m[1] === "" ? "[]" : m[1]!));
  return [root, ...segments];
}

/**
 * Checks a form body or query string before it is parsed: every name and
 * value decodes strictly, and no parameter is given both as a value and as a
 * container (`metadata=` with `metadata[a]=1`, in either order), which a
 * parser would otherwise resolve silently one way or the other.
 */
export function checkFormPairs(text: string): void {
  const values = new Set<string>();
  const containers = new Set<string>();
  for (const pair of text.split("&")) {
    if (pair === "") continue;
    const at = pair.indexOf("=");
    const key = decodeFormComponent(at === -1 ? pair : pair.slice(0, at));
    if (at !== -1) decodeFormComponent(pair.slice(at + 1));
    const path = pathOf(key);
    // A name that is empty (`=x`) or begins with a bracket (`[a]=x`, which a parser would read as `a`) names no
    // parameter an operation takes: refused as unknown, naming it as given (JSON's `{"":1}` is refused the same way).
    if (path[0] === "") throw new ApiError("parameter_unknown", `Received unknown parameter: ${key.slice(0, 100)}`, { param: key });
    // `tags[]` names a list: `tags[]=a&tags[]=b` (or `tags=a`) is values of one parameter, not a container.
    const named = path.filter((segment) => segment !== "[]");
    for (let i = 1; i < named.length; i++) containers.add(named.slice(0, i).join("\u0000"));
    values.add(named.join("\u0000"));
  }
  const clash = [...values].find((path) => containers.has(path));
  if (clash !== undefined) {
    const name = clash
      .split("\u0000")
      .map((segment, i) => (i === 0 ? segment : `[${segment}]`))
      .join("");
    throw new ApiError("parameter_invalid", `Parameter '${name}' was given both as a value and with [keys].`, { param: name });
  }
}
