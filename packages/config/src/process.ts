import { ConfigError } from "./environment.js";
import { RELEASE } from "./release.js";

/** What a process runs until it is told to stop. */
export interface Stoppable {
  /** Finishes or hands back the work in hand, then closes; the process exits 0 once it resolves. */
  stop(): Promise<void>;
}

/** The lines a process logs about its own life (a pino logger fits). */
export interface LifecycleLogger {
  info(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** One entry point: how it reads its environment, makes its logger and starts. */
export interface ProcessDefinition<Config extends { readonly supervised?: boolean | undefined }, Logger extends LifecycleLogger, Running extends Stoppable> {
  /** The name its lines on stderr start with (`rms-core`). */
  readonly name: string;
  /** Reads the environment; a ConfigError is one line on stderr and exit code 2. */
  config(env: Readonly<Record<string, string | undefined>>): Config;
  logger(config: Config): Logger;
  /** Starts the process; a failure is one line on stderr and exit code 1. */
  start(config: Config, logger: Logger): Promise<Running>;
}

/** The parts of `process` a lifecycle uses (tests hand in their own). */
export interface ProcessHost {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdin: { on(event: "end", listener: () => void): unknown; resume(): unknown };
  readonly stderr: { write(text: string): unknown };
  on(signal: "SIGTERM" | "SIGINT", listener: () => void): unknown;
  exit(code: number): void;
}

/** Exit codes: stopped as asked, could not start or stop, refused its configuration. */
export const EXIT_STOPPED = 0;
export const EXIT_FAILED = 1;
export const EXIT_CONFIG = 2;

/**
 * The lifecycle every entry point shares (core, worker, gateway): configuration (exit 2 on a bad value),
 * start (exit 1 if it fails), then one stop on SIGTERM, SIGINT or, when started by the launcher
 * (`supervised`: stdin is the launcher's pipe), the pipe's end: "launcher gone", even after a SIGKILL of
 * the launcher. Exit 0 once stopped, 1 if stopping failed. Resolves once the process runs (or has exited). Its first log
 * line names the release.
 */
export async function runProcess<Config extends { readonly supervised?: boolean | undefined }, Logger extends LifecycleLogger, Running extends Stoppable>(
  definition: ProcessDefinition<Config, Logger, Running>,
  host: ProcessHost = process,
): Promise<void> {
  const say = (line: string) => host.stderr.write(`${definition.name}: ${line}\n`);
  const failed = (error: unknown) => {
    say(`failed to start: ${error instanceof Error ? error.message : String(error)}`);
    host.exit(EXIT_FAILED);
  };
  let config: Config;
  try {
    config = definition.config(host.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) return failed(error);
    say(error.message);
    return host.exit(EXIT_CONFIG);
  }
  let logger: Logger | undefined;
  let running: Running;
  try {
    logger = definition.logger(config);
    // The first line of every process: which release runs (RELEASES.md), so a log of a rolling upgrade says which is which.
    logger.info({ release: RELEASE }, `${definition.name} ${RELEASE} starting`);
    running = await definition.start(config, logger);
  } catch (error) {
    logger?.error({ err: error }, "failed to start");
    return failed(error);
  }
  const log = logger;

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "stopping");
    running.stop().then(
      () => {
        // The pair every entry point logs: an operator reading the log knows the stop finished.
        log.info({ signal }, "stopped");
        host.exit(EXIT_STOPPED);
      },
      (error: unknown) => {
        log.error({ err: error }, "stop failed");
        host.exit(EXIT_FAILED);
      },
    );
  };
  host.on("SIGTERM", () => stop("SIGTERM"));
  host.on("SIGINT", () => stop("SIGINT"));
  if (config.supervised) {
    host.stdin.on("end", () => stop("launcher gone"));
    host.stdin.resume();
  }
}
