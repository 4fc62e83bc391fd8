import {
  AdminService,
  DashboardSessionService,
  JobService,
  KEY_KIND,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  RpcError,
  TransportError,
  bearerMetadata,
  coreTlsFilesFromEnv,
  createClient,
  mutualTlsCredentials,
  type Job,
  type KeyKindName,
  type ServiceClient,
} from "@rms/proto";
import { readFileSync } from "node:fs";
import { RMSError } from "@rms/sdk";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { MissingAdminTokenError, readAdminToken } from "./admin-token.js";
import { accountJson, jobJson, jobLine, keyJson, keyLine } from "./format.js";
import { migrateStatus, migrateUp } from "./migrate.js";
import { adminTokenFileOf } from "./paths.js";
import { checkOperatorEnvironment, ConfigError, DEFAULT_CORE_ADDR } from "./config.js";
import { DEFAULT_API_BASE } from "./developer/api.js";
import { listenCommand, logsTailCommand, triggerCommand } from "./developer/commands.js";
import { describeApiError } from "./developer/errors.js";
import { TriggerRefusedError } from "./developer/trigger.js";

/** How long `rms` waits for each answer of core (the gRPC deadline of every call). */
export const CALL_DEADLINE_MS = 5_000;

export interface CliIo {
  env: Record<string, string | undefined>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Runs the development stack (`rms start`); injected so the CLI stays testable. */
  startStack?: () => Promise<number>;
  /** Runs the cluster (`rms cluster`); injected likewise. */
  startCluster?: () => Promise<number>;
  /** A signal aborted on SIGINT or SIGTERM, for the commands that run until stopped (`listen`, `logs tail`). */
  interrupted?: () => AbortSignal;
}

function futureUnixSeconds(value: string): number {
  if (!/^\d{1,12}$/.test(value)) throw new InvalidArgumentError("must be a Unix timestamp in seconds");
  if (Number(value) <= Date.now() / 1000) throw new InvalidArgumentError("must be in the future (a Unix timestamp in seconds)");
  return Number(value);
}

/** A whole number within [min, max], else one line saying so (never a serialization error from deep inside). */
function wholeNumber(min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^\d{1,9}$/.test(value) || Number(value) < min || Number(value) > max) throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}`);
    return Number(value);
  };
}

/** The version of this CLI, from its package.json (one directory up from src/ and dist/ alike). */
function cliVersion(): string {
  return (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;
}

const ENVIRONMENT_HELP = `
Environment of the developer commands (listen, trigger, logs tail):
  RMS_API_KEY        the API key (--api-key overrides it)
  RMS_API_BASE       where the API is (default ${DEFAULT_API_BASE}; --api-base overrides it)
  RMS_CA             a PEM certificate to trust besides the system's (--ca overrides it); for a localhost base
                     the development certificate in RMS_DATA_DIR is trusted when it exists

Environment of the operator commands:
  RMS_ADMIN_TOKEN    the admin token core accepts (default: the development token \`npm start\` keeps in RMS_DATA_DIR)
  CORE_ADDR          address of the core gRPC service (default ${DEFAULT_CORE_ADDR}; --core overrides it)
  RMS_DATA_DIR       the development data directory (default: .data/ at the repository root)
  MONGODB_URI, MONGODB_DATABASE
                     the database \`rms migrate\` works on (the one core uses; database default rms)
  CORE_TLS_CERT_FILE, CORE_TLS_KEY_FILE, CORE_TLS_CA_FILE
                     when set, talk to core over TLS presenting this client certificate`;

function scopeList(value: string): string[] {
  return value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

/** A client of one core service, closed when the command is done. */
type CoreClient<S extends typeof AdminService | typeof JobService | typeof DashboardSessionService> = ServiceClient<S> & { close(): void };

/** What a command's action works with: clients of core (made on first use, with the admin token) and the output. */
interface CommandContext {
  readonly io: CliIo;
  admin(): CoreClient<typeof AdminService>;
  jobs(): CoreClient<typeof JobService>;
  dashboardSessions(): CoreClient<typeof DashboardSessionService>;
  /** One line: the JSON object with `--json`, else the human text. */
  print(json: boolean, value: Record<string, unknown>, human: string): void;
}

/** Declares one command on the Command made for it: description, arguments, options and its action. */
type CommandDefinition = (command: Command, context: CommandContext) => void;

const JSON_OPTION = "print one JSON object per line";

function accountsCreate(command: Command, context: CommandContext): void {
  command
    .description("create an account")
    .option("--json", JSON_OPTION)
    .action(async (opts: { json?: boolean }) => {
      const { account } = await context.admin().createAccount({});
      context.print(!!opts.json, accountJson(account!), `created account ${account!.id}`);
    });
}

function accountsList(command: Command, context: CommandContext): void {
  command
    .description("list accounts, newest first")
    .option("--limit <n>", `how many (1-${LIST_LIMIT_MAX})`, wholeNumber(1, LIST_LIMIT_MAX), LIST_LIMIT_DEFAULT)
    .option("--json", JSON_OPTION)
    .action(async (opts: { json?: boolean; limit: number }) => {
      const { accounts: list } = await context.admin().listAccounts({ limit: opts.limit });
      for (const account of list) context.print(!!opts.json, accountJson(account), account.id);
    });
}

function keysCreate(command: Command, context: CommandContext): void {
  command
    .description("create an API key; its secret is printed once")
    .requiredOption("--account <acct_id>", "the account the key belongs to")
    .addOption(new Option("--kind <kind>", "key kind").choices(KEY_KIND.names).makeOptionMandatory())
    .addOption(new Option("--mode <mode>", "live or test data").choices(["live", "test"]).makeOptionMandatory())
    .option("--scopes <a,b>", "scopes of a restricted key, comma-separated", scopeList)
    .option("--expires-at <unix>", "expiry as a Unix timestamp in seconds, in the future", futureUnixSeconds)
    .option("--json", JSON_OPTION)
    .action(async (opts: { account: string; kind: string; mode: string; scopes?: string[]; expiresAt?: number; json?: boolean }) => {
      const { key, secret } = await context.admin().createKey({
        accountId: opts.account,
        kind: KEY_KIND.valueOf(opts.kind as KeyKindName),
        livemode: opts.mode === "live",
        scopes: opts.scopes ?? [],
        expiresAt: BigInt(opts.expiresAt ?? 0),
      });
      context.print(!!opts.json, keyJson(key!, secret), `created ${opts.kind} key ${key!.id}\n${secret}\n(the secret is shown only this once)`);
    });
}

function keysList(command: Command, context: CommandContext): void {
  command
    .description("list an account's keys (never their secrets)")
    .requiredOption("--account <acct_id>", "the account")
    .option("--json", JSON_OPTION)
    .action(async (opts: { account: string; json?: boolean }) => {
      const { keys: list } = await context.admin().listKeys({ accountId: opts.account });
      for (const key of list) context.print(!!opts.json, keyJson(key), keyLine(key));
    });
}

function keysRevoke(command: Command, context: CommandContext): void {
  command
    .description("revoke a key at once")
    .argument("<key_id>", "the key to revoke")
    .option("--json", JSON_OPTION)
    .action(async (keyId: string, opts: { json?: boolean }) => {
      const { key } = await context.admin().revokeKey({ keyId, reason: "operator" });
      context.print(!!opts.json, keyJson(key!), `revoked ${key!.id}`);
    });
}

// Jobs of any account, with the admin credential (core's JobService allows the admin role every tenant).
interface TenantOptions {
  readonly account: string;
  readonly mode: string;
  readonly json?: boolean;
}

/** The options naming whose job it is (account and mode), and --json. */
function tenantOptions(command: Command): Command {
  return command
    .requiredOption("--account <acct_id>", "the account the job belongs to")
    .addOption(new Option("--mode <mode>", "live or test data").choices(["live", "test"]).makeOptionMandatory())
    .option("--json", "print one JSON object per line (the job as the API shows it)");
}

const tenantOf = (opts: TenantOptions) => ({ accountId: opts.account, livemode: opts.mode === "live" });

function printJob(context: CommandContext, json: boolean, job: Job): void {
  context.print(json, json ? jobJson(job) : {}, jobLine(job));
}

function jobsList(command: Command, context: CommandContext): void {
  tenantOptions(command.description("list an account's jobs, newest first"))
    .option("--limit <n>", `how many (1-${LIST_LIMIT_MAX})`, wholeNumber(1, LIST_LIMIT_MAX), LIST_LIMIT_DEFAULT)
    .option("--status <status>", "only jobs in this status (queued, running, succeeded, failed, canceled)")
    .option("--type <type>", "only jobs of this type (resources.bulk_update, resources.bulk_delete, resources.import, resources.export)")
    .option("--starting-after <job_id>", "the page after this job")
    .action(async (opts: TenantOptions & { limit: number; status?: string; type?: string; startingAfter?: string }) => {
      const { jobs: list } = await context.jobs().listJobs({
        tenant: tenantOf(opts),
        limit: opts.limit,
        status: opts.status ?? "",
        type: opts.type ?? "",
        startingAfter: opts.startingAfter ?? "",
      });
      // No job of an account that does not exist: core's admin list does not ask, so an empty page is checked here
      // (its keys' list refuses an unknown account), and the user is told instead of shown nothing.
      if (list.length === 0) await context.admin().listKeys({ accountId: opts.account });
      for (const job of list) printJob(context, !!opts.json, job);
    });
}

function jobsGet(command: Command, context: CommandContext): void {
  tenantOptions(command.description("show one job with its progress").argument("<job_id>", "the job")).action(async (id: string, opts: TenantOptions) => {
    const { job } = await context.jobs().getJob({ tenant: tenantOf(opts), id });
    printJob(context, !!opts.json, job!);
  });
}

function jobsCancel(command: Command, context: CommandContext): void {
  tenantOptions(command.description("cancel a queued job at once, or ask a running one to stop at its next checkpoint").argument("<job_id>", "the job")).action(
    async (id: string, opts: TenantOptions) => {
      const { job } = await context.jobs().cancelJob({ tenant: tenantOf(opts), id });
      printJob(context, !!opts.json, job!);
    },
  );
}

/** `https://host[:port]`, without a trailing slash. */
function httpsOrigin(value: string): string {
  const origin = value.replace(/\/+$/, "");
  if (!/^https:\/\/[^/?#\s]+$/.test(origin)) throw new InvalidArgumentError("must be https://host[:port]");
  return origin;
}

function dashboard(command: Command, context: CommandContext): void {
  command
    .description("print a sign-in link of the dashboard: a short-lived restricted key of the account in the link's fragment")
    .requiredOption("--account <acct_id>", "the account")
    .addOption(new Option("--mode <mode>", "live or test data").choices(["live", "test"]).makeOptionMandatory())
    .option("--read-only", "only the read scopes: the session changes nothing")
    .option("--expires-in <seconds>", "how long the link signs in (1-86400)", wholeNumber(1, 86_400), 3600)
    .option("--origin <https://host:port>", "the gateway the link opens (default https://localhost:$PORT, PORT default 8443)", httpsOrigin)
    .option("--json", "print the session as the API answers it")
    .action(async (opts: { account: string; mode: string; readOnly?: boolean; expiresIn: number; origin?: string; json?: boolean }) => {
      const origin = opts.origin ?? `https://localhost:${context.io.env.PORT || "8443"}`;
      const { key, secret } = await context.dashboardSessions().createDashboardSession({
        tenant: { accountId: opts.account, livemode: opts.mode === "live" },
        readOnly: !!opts.readOnly,
        expiresIn: BigInt(opts.expiresIn),
      });
      const url = `${origin}/dashboard/#key=${secret}`;
      const session = {
        id: key!.id,
        object: "dashboard_session",
        url,
        read_only: !!opts.readOnly,
        expires_at: Number(key!.expiresAt),
        api_key: key!.id,
        revoked_at: null,
      };
      context.print(
        !!opts.json,
        session,
        `${url}\n(signs in until ${new Date(session.expires_at * 1000).toISOString()}; revoke with \`rms keys revoke ${key!.id}\`)`,
      );
    });
}

function migrationsStatus(command: Command, context: CommandContext): void {
  command
    .description("show every migration step of the database: done, running (how far) or pending; the lease; how far back a rollback may go")
    .option("--json", "print one JSON object")
    .action(async (opts: { json?: boolean }) => migrateStatus(context.io, !!opts.json));
}

function migrationsUp(command: Command, context: CommandContext): void {
  command
    .description("run the migration steps not done yet, under the lease a core's start takes (waits while another process runs them)")
    .option("--dry-run", "show what each step not done yet would change, and change nothing")
    .option("--json", "print JSON objects, one per line")
    .action(async (opts: { dryRun?: boolean; json?: boolean }) => migrateUp(context.io, { dryRun: !!opts.dryRun, json: !!opts.json }));
}

function start(command: Command, context: CommandContext): void {
  command.description("run the whole development stack in the foreground (what `npm start` does)").action(async () => {
    if (!context.io.startStack) throw new Error("start is not available here");
    process.exitCode = await context.io.startStack();
  });
}

function cluster(command: Command, context: CommandContext): void {
  command
    .description(
      "run the scale-out shape on this machine in the foreground (what `npm run cluster` does): a three-member replica set, two cores, two gateways, " +
        "two workers, HAProxy in front",
    )
    .action(async () => {
      if (!context.io.startCluster) throw new Error("cluster is not available here");
      process.exitCode = await context.io.startCluster();
    });
}

/** A command with subcommands (`rms keys create`). */
interface CommandGroup {
  readonly description: string;
  readonly commands: Readonly<Record<string, CommandDefinition>>;
}

/** The commands of a developer who holds an API key, on the SDK (docs/streams.md, "The CLI"). */
const DEVELOPER_COMMANDS: Readonly<Record<string, CommandGroup | CommandDefinition>> = {
  listen: (command, context) => listenCommand(command, context.io),
  trigger: (command, context) => triggerCommand(command, context.io),
  logs: { description: "the account's request logs", commands: { tail: (command, context) => logsTailCommand(command, context.io) } },
};

/** The operator's commands, in the order the help lists them: core's admin service, the database, the stacks. */
const OPERATOR_COMMANDS: Readonly<Record<string, CommandGroup | CommandDefinition>> = {
  accounts: { description: "manage accounts", commands: { create: accountsCreate, list: accountsList } },
  keys: { description: "manage API keys", commands: { create: keysCreate, list: keysList, revoke: keysRevoke } },
  jobs: { description: "look at and cancel jobs of any account", commands: { list: jobsList, get: jobsGet, cancel: jobsCancel } },
  dashboard,
  migrate: {
    description: "look at and run the database's migration steps (talks to MongoDB itself: MONGODB_URI, MONGODB_DATABASE)",
    commands: { status: migrationsStatus, up: migrationsUp },
  },
  start,
  cluster,
};

function declareCommands(program: Command, context: CommandContext): void {
  const groups = [
    ["Commands for developers (an API key):", DEVELOPER_COMMANDS],
    ["Operator commands (the admin token, core, the database):", OPERATOR_COMMANDS],
  ] as const;
  for (const [heading, commands] of groups) {
    for (const [name, entry] of Object.entries(commands)) {
      if (typeof entry === "function") {
        entry(program.command(name).helpGroup(heading), context);
        continue;
      }
      const group = program.command(name).helpGroup(heading).description(entry.description);
      for (const [subcommand, define] of Object.entries(entry.commands)) define(group.command(subcommand), context);
    }
  }
}

/** The context of one run: its clients of core at the address `core()` names when first used; `close()` ends them. */
function commandContext(io: CliIo, core: () => string): CommandContext & { close(): void } {
  const connect = <S extends typeof AdminService | typeof JobService | typeof DashboardSessionService>(service: S): CoreClient<S> => {
    checkOperatorEnvironment(io.env);
    const token = readAdminToken(io.env, adminTokenFileOf(io.env));
    const tls = coreTlsFilesFromEnv(io.env);
    return createClient(service, core(), {
      metadata: bearerMetadata(token),
      timeoutMs: CALL_DEADLINE_MS,
      ...(tls ? { credentials: mutualTlsCredentials(tls) } : {}),
    });
  };
  let admin: CoreClient<typeof AdminService> | undefined;
  let jobs: CoreClient<typeof JobService> | undefined;
  let sessions: CoreClient<typeof DashboardSessionService> | undefined;
  return {
    io,
    admin: () => (admin ??= connect(AdminService)),
    jobs: () => (jobs ??= connect(JobService)),
    dashboardSessions: () => (sessions ??= connect(DashboardSessionService)),
    print: (json, value, human) => io.stdout(`${json ? JSON.stringify(value) : human}\n`),
    close() {
      admin?.close();
      jobs?.close();
      sessions?.close();
    },
  };
}

/**
 * The `rms` operator CLI. Returns the exit code: 0 on success, 1 on a failed
 * call (one line on stderr), 2 on a usage error.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const program = new Command("rms")
    .description(
      "The Resource Management Service's CLI: a developer's view of an account (events, webhooks, request logs) with an API key, and the operator's " +
        "(accounts, keys, jobs, the stack) with the admin token.",
    )
    .version(cliVersion(), "-V, --version", "print the version of rms")
    .option("--core <addr>", "address of the core gRPC service", io.env.CORE_ADDR || DEFAULT_CORE_ADDR)
    .addHelpText("after", ENVIRONMENT_HELP)
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError(false);
  const core = () => program.opts<{ core: string }>().core;
  const context = commandContext(io, core);
  declareCommands(program, context);

  try {
    await program.parseAsync(argv, { from: "user" });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof ConfigError || error instanceof TriggerRefusedError) {
      io.stderr(`rms: ${error.message}\n`);
      return 2;
    }
    io.stderr(`rms: ${describe(error, core(), io.env)}\n`);
    return 1;
  } finally {
    context.close();
  }
}

/**
 * Where the admin token came from, for the refusal of a wrong one: RMS_ADMIN_TOKEN, or the file of the data directory
 * (RMS_DATA_DIR, or the repository's `.data/`), which belongs to another stack when the core refuses it.
 */
function adminTokenSource(env: Record<string, string | undefined>): string {
  if (env.RMS_ADMIN_TOKEN) return "from RMS_ADMIN_TOKEN (it must be the token the running core was started with)";
  const dataDir = env.RMS_DATA_DIR ? `RMS_DATA_DIR=${env.RMS_DATA_DIR}` : "RMS_DATA_DIR unset: the repository's .data/";
  return (
    `read from ${adminTokenFileOf(env)} (${dataDir}): the running core was started with another token; point RMS_DATA_DIR at the data directory ` +
    `of the stack that runs it, or set RMS_ADMIN_TOKEN`
  );
}

function describe(error: unknown, core: string, env: Record<string, string | undefined>): string {
  if (error instanceof MissingAdminTokenError) return error.message;
  if (error instanceof RMSError) return describeApiError(error);
  if (error instanceof RpcError) {
    // No answer before the deadline is not "unreachable": core was reached (or is being reached) but was too slow.
    if (error instanceof TransportError && error.deadlineExceeded) {
      return (
        `the core at ${core} did not answer within the ${CALL_DEADLINE_MS / 1000} s deadline (DEADLINE_EXCEEDED): it is up but overloaded, or its ` +
        `database answers slowly; a change asked for may still have been made`
      );
    }
    if (error.code === "service_unavailable" && error instanceof TransportError) return `cannot reach the core at ${core} (is \`npm start\` running?)`;
    // Core itself answered that it cannot serve now (its database is down or slow): say what it said.
    if (error.code === "service_unavailable") return `the core at ${core} could not serve the call: ${error.message} [service_unavailable]`;
    if (error.code === "admin_token_invalid") return `the core at ${core} refused the admin token ${adminTokenSource(env)}`;
    return `${error.message}${error.param ? ` (${error.param})` : ""} [${error.code}]`;
  }
  return error instanceof Error ? error.message : String(error);
}
