// CORE_CLIENTS_FILE as core checks it: a file it takes whole, or one line that says what is wrong and where.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keyHash } from "@rms/proto";
import { afterAll, describe, expect, it } from "vitest";
import { parseCoreConfig } from "../config.js";
import { METHOD_CALLERS, SERVED_METHODS } from "../domains.js";
import { builtInClients } from "./built-in.js";
import { mayActOn, mayCall } from "./client.js";
import { parseClientsFile } from "./file.js";
import { CallerTable } from "./table.js";

const HASH = keyHash("billing-token-0123456789");
const ACCOUNT = "acct_1a2b3c4d5e6f7g8h9i0j1k";
const entry = { name: "billing", token_sha256: [HASH], methods: ["rms.v1.ResourceService/GetResource"], accounts: [ACCOUNT], modes: ["test"] };
const parse = (clients: unknown[]) => parseClientsFile(JSON.stringify({ clients }), SERVED_METHODS, "clients.json");

describe("a clients file core takes", () => {
  it("gives each entry its methods, accounts and modes; a whole service by Service/*", () => {
    const [billing, importer] = parse([
      entry,
      {
        name: "importer",
        tls_san: ["importer.internal"],
        methods: ["/rms.v1.ResourceService/*", "rms.v1.JobService/GetJob"],
        accounts: "*",
        modes: ["test", "live"],
      },
    ]);
    expect(billing!.tokenSha256).toEqual([HASH]);
    expect(mayCall(billing!.client, "/rms.v1.ResourceService/GetResource")).toBe(true);
    expect(mayCall(billing!.client, "/rms.v1.ResourceService/ListResources")).toBe(false);
    expect(mayActOn(billing!.client, { account: ACCOUNT, livemode: false })).toBe(true);
    expect(mayActOn(billing!.client, { account: ACCOUNT, livemode: true })).toBe(false);
    expect(mayActOn(billing!.client, { account: "acct_other", livemode: false })).toBe(false);
    expect([...importer!.client.methods].sort()).toEqual(
      [...[...SERVED_METHODS].filter((m) => m.startsWith("/rms.v1.ResourceService/")), "/rms.v1.JobService/GetJob"].sort(),
    );
    expect(importer!.tlsSans).toEqual(["importer.internal"]);
    expect(mayActOn(importer!.client, { account: "acct_any", livemode: true })).toBe(true);
    // Upper-case hex is the same hash.
    expect(parse([{ ...entry, token_sha256: [HASH.toUpperCase()] }])[0]!.tokenSha256).toEqual([HASH]);
    expect(parse([])).toEqual([]);
  });
});

describe("a clients file core refuses, saying where", () => {
  it.each([
    ["not JSON", "{", /^clients\.json: not JSON/],
    ["no clients list", "{}", /^clients\.json: clients: /],
    ["an unknown field", { ...entry, method: [] }, /clients\[0\]: Unrecognized key: "method"/],
    ["a short hash", { ...entry, token_sha256: ["abc"] }, /clients\[0\]\.token_sha256\[0\]: must be the SHA-256 of a token, 64 hex digits/],
    ["three hashes", { ...entry, token_sha256: [HASH, HASH, HASH] }, /holds at most two hashes/],
    ["no credential", { ...entry, token_sha256: undefined }, /clients\[0\] \(billing\): give token_sha256 or tls_san/],
    [
      "a method core does not serve",
      { ...entry, methods: ["rms.v1.ResourceService/DropAll"] },
      /clients\[0\]\.methods\[0\]: core serves no method "rms.v1.ResourceService\/DropAll"/,
    ],
    ["a service core does not serve", { ...entry, methods: ["rms.v1.NoService/*"] }, /core serves no service "rms.v1.NoService\/\*"/],
    ["no methods", { ...entry, methods: [] }, /methods: must name at least one method/],
    ["a bad account", { ...entry, accounts: ["billing"] }, /accounts\[0\]: must be an account id/],
    ["accounts neither * nor a list", { ...entry, accounts: "all" }, /accounts: must be "\*" or a list of account ids/],
    ["a bad mode", { ...entry, modes: ["prod"] }, /modes\[0\]: must be "test" or "live"/],
    ["a bad name", { ...entry, name: "Billing Service" }, /name: must be 1-63 lower-case letters/],
    ["a built-in name", { ...entry, name: "gateway" }, /the name "gateway" is reserved/],
    ["a label's name", { ...entry, name: "unknown" }, /the name "unknown" is reserved/],
    ["admin calls for some accounts", { ...entry, methods: ["rms.v1.AdminService/ListKeys"] }, /AdminService methods need "accounts": "\*"/],
    ["the events watch for some accounts", { ...entry, methods: ["rms.v1.EventService/WatchEvents"] }, /WatchEvents gives every account's data/],
    ["the events watch in one mode", { ...entry, accounts: "*", methods: ["rms.v1.EventService/WatchEvents"] }, /needs "accounts": "\*" and both modes/],
  ])("%s", (_case, content, message) => {
    const text = typeof content === "string" ? content : JSON.stringify({ clients: [content] });
    expect(() => parseClientsFile(text, SERVED_METHODS, "clients.json")).toThrow(message);
  });

  it("leaves the events watch (every account's events) out of a Service/* of a client limited to some accounts or one mode", () => {
    const [limited, everything] = parse([
      { ...entry, methods: ["rms.v1.EventService/*"] },
      { ...entry, name: "feed", token_sha256: [keyHash("feed-token-0123456789")], methods: ["rms.v1.EventService/*"], accounts: "*", modes: ["test", "live"] },
    ]);
    expect(limited!.client.methods.has("/rms.v1.EventService/ListEvents")).toBe(true);
    expect(limited!.client.methods.has("/rms.v1.EventService/WatchEvents")).toBe(false);
    expect(everything!.client.methods.has("/rms.v1.EventService/WatchEvents")).toBe(true);
  });

  it("a name or a credential given twice", () => {
    expect(() => parse([entry, { ...entry, token_sha256: [keyHash("other-token-0123456789")] }])).toThrow(
      /clients\[1\] \(billing\): another entry has this name/,
    );
    const builtIn = builtInClients({ operator: "operator-token-0123456789" }, METHOD_CALLERS);
    expect(() => new CallerTable(builtIn, [...parse([entry]), ...parse([{ ...entry, name: "copy" }])])).toThrow(/is also billing's/);
    expect(() => new CallerTable(builtIn, parse([{ ...entry, token_sha256: [keyHash("operator-token-0123456789")] }]))).toThrow(
      /of billing is also operator's/,
    );
  });
});

describe("CORE_CLIENTS_FILE at start", () => {
  const dir = mkdtempSync(join(tmpdir(), "rms-clients-config-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const base = { MONGODB_URI: "mongodb://127.0.0.1:27017/", RMS_ADMIN_TOKEN: "operator-token-0123456789" };

  it("is read and checked with the rest of the configuration: one line naming the variable, the file and the place", () => {
    const file = join(dir, "clients.json");
    writeFileSync(file, JSON.stringify({ clients: [entry] }));
    expect(parseCoreConfig({ ...base, CORE_CLIENTS_FILE: file }).clients).toMatchObject({ file, entries: [{ client: { name: "billing" } }] });
    expect(parseCoreConfig(base).clients).toBeNull();
    expect(() => parseCoreConfig({ ...base, CORE_CLIENTS_FILE: join(dir, "missing.json") })).toThrow(
      /^CORE_CLIENTS_FILE .*missing\.json: cannot be read \(ENOENT\)$/,
    );
    writeFileSync(file, JSON.stringify({ clients: [{ ...entry, modes: [] }] }));
    expect(() => parseCoreConfig({ ...base, CORE_CLIENTS_FILE: file })).toThrow(
      /^CORE_CLIENTS_FILE .*clients\.json: clients\[0\]\.modes: must name at least one mode$/,
    );
    writeFileSync(file, JSON.stringify({ clients: [{ ...entry, token_sha256: [keyHash(base.RMS_ADMIN_TOKEN)] }] }));
    expect(() => parseCoreConfig({ ...base, CORE_CLIENTS_FILE: file })).toThrow(
      /^CORE_CLIENTS_FILE .*clients\.json: the token hash .* of billing is also operator's/,
    );
  });
});
