/**
 * Parameters as a query string in Stripe's bracket notation, as the API reads it: `created[gte]=1700000000`,
 * `metadata[plan]=pro`, a list as `ids[]=a&ids[]=b`; undefined and null are left out.
 */
export function queryString(params: object | undefined): string {
  const pairs = new URLSearchParams();
  const add = (name: string, value: unknown) => {
    if (value === undefined || value === null) return;
    if (Array.isArray(value)) for (const item of value) add(`${name}[]`, item);
    else if (typeof value === "object") for (const [key, inner] of Object.entries(value)) add(`${name}[${key}]`, inner);
    else pairs.append(name, String(value));
  };
  for (const [name, value] of Object.entries(params ?? {})) add(name, value);
  const text = pairs.toString();
  return text === "" ? "" : `?${text}`;
}

/** A path with its `{name}` parameters filled in, in order. */
export function fillPath(path: string, values: readonly string[]): string {
  let index = 0;
  return path.replace(/\{[A-Za-z_]+\}/g, () => {
    const value = values[index++];
    if (typeof value !== "string" || value === "") throw new TypeError(`${path}: an id is required`);
    return encodeURIComponent(value);
  });
}
