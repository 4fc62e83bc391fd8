/**
 * A user agent in a few words for a table ("Chrome 156", "curl 8.5.0", "rms-sdk 1.4.1"): the product a person
 * recognises, and its version; the whole string stays in the cell's title.
 */
const KNOWN: readonly [RegExp, string][] = [
  [/\bEdg\/([\d.]+)/, "Edge"],
  [/\bHeadlessChrome\/(\d+)/, "Headless Chrome"],
  [/\bChrome\/(\d+)/, "Chrome"],
  [/\bFirefox\/(\d+)/, "Firefox"],
  [/\bVersion\/([\d.]+).*Safari\//, "Safari"],
];

export function shortUserAgent(ua: string | null): string {
  if (!ua) return "—";
  for (const [pattern, name] of KNOWN) {
    const match = pattern.exec(ua);
    if (match) return `${name} ${match[1]}`;
  }
  // Otherwise its first product token (`curl/8.5.0`, `Stripe/v1 NodeBindings/17.0.0`, `rms-sdk/1.4.1 node/20`).
  const first = ua.trim().split(/\s+/)[0] ?? ua;
  return first.length > 40 ? `${first.slice(0, 40)}…` : first.replace("/", " ");
}
