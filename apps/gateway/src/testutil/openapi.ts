// The OpenAPI 3.1 serialization rules as generated clients and schemathesis apply them, for the tests that send what the document declares.

// biome-ignore lint/suspicious/noExplicitAny: the document as JSON; each assertion states the shape it expects.
export type Obj = Record<string, any>;

const encode = (value: unknown) => encodeURIComponent(typeof value === "string" ? value : JSON.stringify(value));

/**
 * One query parameter by the OpenAPI 3.1 serialization rules (section 4.8.12.4, "Style Values"; defaults
 * `form`, with `explode` true for `form`): primitives `name=v`; arrays `name=a&name=b` (form, explode) or
 * `name=a,b` (form); objects `k=v&k2=v2` (form, explode), `name=k,v,k2,v2` (form), `name[k]=v` (deepObject).
 */
export function serializeQuery(parameter: Obj, value: unknown): string {
  const name = String(parameter["name"]);
  const style = (parameter["style"] as string | undefined) ?? "form";
  const explode = (parameter["explode"] as boolean | undefined) ?? style === "form";
  const pair = (key: string, v: unknown) => `${encodeURIComponent(key)}=${encode(v)}`;
  if (Array.isArray(value)) {
    if (style === "deepObject") throw new Error(`${name}: deepObject of an array is undefined`);
    const separator = { form: ",", spaceDelimited: " ", pipeDelimited: "|" }[style];
    if (separator === undefined) throw new Error(`${name}: style ${style} does not take an array`);
    return explode ? value.map((item) => pair(name, item)).join("&") : `${encodeURIComponent(name)}=${value.map(encode).join(encodeURIComponent(separator))}`;
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value);
    if (style === "deepObject") return entries.map(([k, v]) => pair(`${name}[${k}]`, v)).join("&");
    if (style !== "form") throw new Error(`${name}: style ${style} does not take an object`);
    return explode ? entries.map(([k, v]) => pair(k, v)).join("&") : `${encodeURIComponent(name)}=${entries.flat().map(encode).join(",")}`;
  }
  return pair(name, value);
}
