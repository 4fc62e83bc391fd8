import { readFileSync } from "node:fs";
import { z } from "zod";
import { isId } from "../ids.js";
import { BUILT_IN_NAMES } from "./built-in.js";
import type { CredentialedClient, Mode } from "./client.js";

/**
 * The RPCs that act for no tenant and take no presented key: the gateway's feed of every tenant's events
 * (docs/streams.md). Only a caller that may see every account's events may be given them.
 */
export const CROSS_TENANT_RPCS: ReadonlySet<string> = new Set(["/rms.v1.EventService/WatchEvents"]);

/**
 * CORE_CLIENTS_FILE: more entries of core's caller table (CONTRACT.md section 15, in ../shared/docs/;
 * docs/internal-clients.md), as JSON:
 *
 *   {"clients":[{"name":"billing","token_sha256":["<hex>"],"methods":["rms.v1.ResourceService/GetResource"],
 *                "accounts":["acct_..."],"modes":["test"]}]}
 *
 * Checked whole before it is used: an unknown field, a method core does not serve, a name or credential given twice
 * is refused with one line that says where, so a typo never widens or silently drops what a client may do.
 */

/** A file the table cannot take: its message is one line that names the file and the place. */
export class ClientsFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ClientsFileError";
  }
}

/** Names in logs and metric labels (bounded: they come from this file), never one of the built-in entries' or the labels of unidentified calls. */
export const CLIENT_NAME = /^[a-z][a-z0-9_-]{0,62}$/;
/** The `client` label of a call with no credential, and of one whose credential names no client. */
export const UNIDENTIFIED_LABELS = ["anonymous", "unknown"] as const;
const RESERVED = new Set<string>([...BUILT_IN_NAMES, ...UNIDENTIFIED_LABELS]);

const entrySchema = z
  .object({
    name: z.string().regex(CLIENT_NAME, "must be 1-63 lower-case letters, digits, '-' or '_', starting with a letter"),
    // Two while a token is rotated: the new one's and the old one's (docs/internal-clients.md, "Rotation").
    token_sha256: z
      .array(z.string().regex(/^[0-9a-fA-F]{64}$/, "must be the SHA-256 of a token, 64 hex digits"))
      .min(1, "must hold at least one hash")
      .max(2, "holds at most two hashes (the new token's and the old one's, while it is rotated)")
      .optional(),
    tls_san: z.array(z.string().trim().min(1, "must not be empty")).min(1, "must hold at least one name").optional(),
    methods: z.array(z.string()).min(1, "must name at least one method"),
    accounts: z.union(
      [z.literal("*"), z.array(z.string().refine((id) => isId("acct", id), "must be an account id (acct_...)")).min(1, "must name at least one account")],
      {
        error: 'must be "*" or a list of account ids',
      },
    ),
    modes: z.array(z.enum(["test", "live"], 'must be "test" or "live"')).min(1, "must name at least one mode"),
  })
  .strict();

const fileSchema = z.object({ clients: z.array(entrySchema) }).strict();

/** The `Service/*` and `Service/Method` forms of the file, against the gRPC paths core serves. */
function methodsOf(patterns: readonly string[], served: ReadonlySet<string>, where: string): Set<string> {
  const methods = new Set<string>();
  patterns.forEach((pattern, at) => {
    const path = pattern.startsWith("/") ? pattern : `/${pattern}`;
    const service = /^\/([^/]+)\/\*$/.exec(path)?.[1];
    const matched = service === undefined ? (served.has(path) ? [path] : []) : [...served].filter((m) => m.startsWith(`/${service}/`));
    if (matched.length === 0)
      throw new ClientsFileError(`${where}.methods[${at}]: core serves no ${service === undefined ? "method" : "service"} "${pattern}"`);
    for (const method of matched) methods.add(method);
  });
  return methods;
}

const ADMIN_SERVICE = "/rms.v1.AdminService/";

/**
 * The entries of a clients file's text. `served`: every gRPC path core serves (domains.ts). `source` names the file
 * in messages. Throws ClientsFileError.
 */
export function parseClientsFile(text: string, served: ReadonlySet<string>, source: string): CredentialedClient[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ClientsFileError(`${source}: not JSON (${(error as Error).message})`);
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = issue.path.map((part) => (typeof part === "number" ? `[${part}]` : `.${String(part)}`)).join("");
    throw new ClientsFileError(`${source}: ${at.replace(/^\./, "") || "the file"}: ${issue.message}`);
  }
  const names = new Set<string>();
  return parsed.data.clients.map((entry, index) => {
    const where = `${source}: clients[${index}] (${entry.name})`;
    if (RESERVED.has(entry.name)) throw new ClientsFileError(`${where}: the name "${entry.name}" is reserved`);
    if (names.has(entry.name)) throw new ClientsFileError(`${where}: another entry has this name`);
    names.add(entry.name);
    if (!entry.token_sha256 && !entry.tls_san) throw new ClientsFileError(`${where}: give token_sha256 or tls_san (how core knows the client)`);
    const methods = methodsOf(entry.methods, served, where.replace(/ \(.*\)$/, ""));
    // Admin calls name accounts in fields of their own, not in a tenant: only a client that may act on every account gets them.
    if (entry.accounts !== "*" && [...methods].some((m) => m.startsWith(ADMIN_SERVICE))) {
      throw new ClientsFileError(`${where}: AdminService methods need "accounts": "*"`);
    }
    // A method that acts for no tenant (the events watch) hands out every account's data in both modes: a client
    // limited to some accounts or one mode never gets it by a `Service/*`, and naming it is refused.
    const everything = entry.accounts === "*" && entry.modes.includes("test") && entry.modes.includes("live");
    if (!everything) {
      const named = entry.methods.map((m) => (m.startsWith("/") ? m : `/${m}`)).filter((m) => CROSS_TENANT_RPCS.has(m));
      if (named.length > 0) throw new ClientsFileError(`${where}: ${named.join(", ")} gives every account's data: it needs "accounts": "*" and both modes`);
      for (const method of CROSS_TENANT_RPCS) methods.delete(method);
    }
    return {
      client: {
        name: entry.name,
        kind: "service",
        methods,
        accounts: entry.accounts === "*" ? "*" : new Set(entry.accounts),
        modes: new Set<Mode>(entry.modes),
        presentedKeyOnly: false,
      },
      tokenSha256: (entry.token_sha256 ?? []).map((hash) => hash.toLowerCase()),
      tlsSans: entry.tls_san ?? [],
    };
  });
}

/** The entries of the file at `path` (read now). Throws ClientsFileError, naming the path. */
export function readClientsFile(path: string, served: ReadonlySet<string>): CredentialedClient[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ClientsFileError(`${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  return parseClientsFile(text, served, path);
}
