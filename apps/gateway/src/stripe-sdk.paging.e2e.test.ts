import { readFileSync } from "node:fs";
import { Agent } from "node:https";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "./testutil/harness.js";

// Issue 34 item 11: the README's stripe-node note, tried. Its ```js block (the one after `<!-- sdk-trial: stripe-node`)
// is loaded as it is written and run with the real SDK against the gateway: paging by `rawRequest` keeps the filters on
// every page and returns each match once.

type Item = { id: string; name: string; status: string; metadata: Record<string, string> };
type Helpers = {
  listAll: (stripe: Stripe, path: string, params?: Record<string, unknown>) => AsyncIterable<Item>;
  searchAll: (stripe: Stripe, query: string, params?: Record<string, unknown>) => AsyncIterable<Item>;
};

/** The README's block after `marker`, as a module exporting `names`. */
async function readmeBlock(marker: string, names: string[]): Promise<Helpers> {
  const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
  const at = readme.indexOf(marker);
  expect(at, `README has ${marker}`).toBeGreaterThan(-1);
  const block = /```js\n([\s\S]*?)```/.exec(readme.slice(at))![1]!;
  return (await import(`data:text/javascript,${encodeURIComponent(`${block}\nexport { ${names.join(", ")} };`)}`)) as Helpers;
}

let stack: Stack;
let stripe: Stripe;
const pro: string[] = [];
const proActive: string[] = [];
beforeAll(async () => {
  stack = await startStack();
  const { key } = await withSecretKey(stack);
  stripe = new Stripe(key, {
    host: "127.0.0.1",
    port: stack.gateway.httpsPort,
    protocol: "https",
    httpAgent: new Agent({ ca: stack.gateway.certificate }),
    maxNetworkRetries: 2,
  });
  for (let i = 0; i < 30; i++) {
    const plan = i % 3 === 0 ? "free" : "pro";
    const status = i % 4 === 0 ? "paused" : "active";
    const created = (await stripe.rawRequest("POST", "/v1/resources", { name: `paging ${i}`, status, metadata: { plan } })) as unknown as Item;
    if (plan === "pro") pro.unshift(created.id);
    if (plan === "pro" && status === "active") proActive.unshift(created.id);
  }
});
afterAll(() => stack?.stop());

describe("the README's stripe-node paging (rawRequest)", () => {
  it("lists every match of the filters once, newest first, across pages of 4", async () => {
    const { listAll } = await readmeBlock("<!-- sdk-trial: stripe-node", ["listAll", "searchAll"]);
    const ids: string[] = [];
    for await (const item of listAll(stripe, "/v1/resources", { status: "active", "metadata[plan]": "pro", limit: "4" })) ids.push(item.id);
    expect(proActive.length).toBeGreaterThan(8);
    expect(ids).toEqual(proActive);
  });

  it("searches every match once across pages of 4, following next_page", async () => {
    const { searchAll } = await readmeBlock("<!-- sdk-trial: stripe-node", ["listAll", "searchAll"]);
    const ids: string[] = [];
    for await (const item of searchAll(stripe, "metadata['plan']:'pro'", { limit: "4" })) ids.push(item.id);
    expect(ids).toEqual(pro);
  });
});
