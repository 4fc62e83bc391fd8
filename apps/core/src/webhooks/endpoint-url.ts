import { isIP } from "node:net";
import { type BlockedRange, classifyAddress } from "./address-policy.js";

/** Why an endpoint url is refused; the caller maps each to a 400 on `url`. */
export type EndpointUrlProblem =
  | "url_invalid"
  | "url_too_long"
  | "url_scheme"
  | "url_credentials"
  | "url_fragment"
  | "url_port"
  | "url_blocked_address"
  | "url_local_name";

export type EndpointUrlCheck =
  | { readonly ok: true; readonly url: string }
  | { readonly ok: false; readonly problem: EndpointUrlProblem; readonly message: string };

export const MAX_ENDPOINT_URL_LENGTH = 2048;

// Names that never lead to the public internet (RFC 6761, RFC 6762, RFC 8375, and ICANN's private-use .internal).
const LOCAL_SUFFIXES = ["localhost", "local", "internal", "home.arpa"];

// How a blocked range reads in a message, article included ("a unspecified address" read badly).
const RANGE_PHRASES: Readonly<Record<BlockedRange, string>> = {
  unspecified: "an unspecified",
  loopback: "a loopback",
  private: "a private",
  link_local: "a link-local",
  carrier_grade_nat: "a carrier-grade NAT",
  multicast: "a multicast",
  broadcast: "a broadcast",
  reserved: "a reserved",
  benchmarking: "a benchmarking",
  documentation: "a documentation",
  unique_local: "a unique local",
  site_local: "a site-local",
  nat64_local: "a local-use NAT64",
  metadata: "a cloud metadata",
  invalid: "an invalid",
};

function refuse(problem: EndpointUrlProblem, message: string): EndpointUrlCheck {
  return { ok: false, problem, message };
}

/** The host of a parsed url without IPv6 brackets. */
export function bareHostname(url: URL): string {
  return url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
}

/**
 * The check at endpoint creation and update (CONTRACT.md section 7, in ../shared/docs/). Names are
 * not resolved here: what a name points to can change, so the address is
 * judged again at every delivery, on the address connected to.
 * `allowPrivate` (development and tests) also admits `http` and local names.
 */
export function checkEndpointUrl(text: string, options: { allowPrivate: boolean }): EndpointUrlCheck {
  if (text.length > MAX_ENDPOINT_URL_LENGTH) return refuse("url_too_long", `The url must be at most ${MAX_ENDPOINT_URL_LENGTH} characters.`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return refuse("url_invalid", "The url is not a valid absolute URL.");
  }
  const schemes = options.allowPrivate ? ["https:", "http:"] : ["https:"];
  if (!schemes.includes(url.protocol)) return refuse("url_scheme", options.allowPrivate ? "The url must use https or http." : "The url must use https.");
  if (url.username !== "" || url.password !== "") return refuse("url_credentials", "The url must not contain a user name or password.");
  if (url.hash !== "" || text.includes("#")) return refuse("url_fragment", "The url must not contain a fragment (#): it is never sent to the receiver.");
  if (url.port === "0") return refuse("url_port", "The url's port must be between 1 and 65535.");
  const host = bareHostname(url);
  if (host === "") return refuse("url_invalid", "The url must name a host.");
  if (options.allowPrivate) return { ok: true, url: url.href };

  // The URL parser has already turned decimal, octal and hex IPv4 spellings into dotted quads.
  if (isIP(host) !== 0) {
    const verdict = classifyAddress(host);
    if (!verdict.allowed)
      return refuse(
        "url_blocked_address",
        `The url's host ${host} is ${RANGE_PHRASES[verdict.range]} address; webhooks are delivered to public addresses only.`,
      );
    return { ok: true, url: url.href };
  }
  const name = host.endsWith(".") ? host.slice(0, -1) : host;
  if (!name.includes(".") || LOCAL_SUFFIXES.some((suffix) => name === suffix || name.endsWith(`.${suffix}`))) {
    return refuse("url_local_name", `The url's host ${host} is a local name; webhooks are delivered to public hosts only.`);
  }
  return { ok: true, url: url.href };
}
