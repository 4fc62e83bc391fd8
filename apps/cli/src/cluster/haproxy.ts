// HAProxy for `npm run cluster`: found on PATH (or where the system's packages put it), else installed from the
// system's packages when that is possible here (root with apt-get), else one line saying how to get it; and its
// configuration: TCP mode (TLS stays with the gateways), the PROXY protocol towards them, health checks on
// /v1/status over HTTPS.
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync } from "node:fs";
import { delimiter, join } from "node:path";

/** HAProxy is missing and cannot be installed here; the message is the one line to print. */
export class HaproxyMissing extends Error {}

/**
 * The address HAProxy connects to the gateways from (its `source`), and the only one whose PROXY header they believe
 * (PROXY_PROTOCOL_PEERS). A loopback address of its own, not 127.0.0.1: a local process connects from 127.0.0.1 unless
 * it binds another source on purpose, so it does not pose as HAProxy by connecting to a gateway's port.
 */
export const PROXY_SOURCE = "127.0.0.2";

function onPath(command: string, env: Readonly<Record<string, string | undefined>>): string | undefined {
  // sbin directories are where the packages put HAProxy, and they are not on every user's PATH.
  const dirs = [...(env.PATH ?? "").split(delimiter), "/usr/sbin", "/usr/local/sbin", "/sbin"];
  return dirs.map((dir) => join(dir, command)).find((path) => path.startsWith("/") && existsSync(path));
}

function run(command: string, args: readonly string[], logFile: string): Promise<number> {
  const log = openSync(logFile, "a");
  const child = spawn(command, args, { stdio: ["ignore", log, log], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  closeSync(log);
  return new Promise((resolve) => {
    child.once("error", () => resolve(127));
    child.once("exit", (code) => resolve(code ?? 1));
  });
}

const HOW_TO_GET_IT =
  "install it from the system's packages (Debian, Ubuntu: sudo apt-get install haproxy; Fedora: sudo dnf install haproxy; macOS: brew install haproxy) " +
  "or put it on PATH";

/**
 * The `haproxy` binary: on PATH or in an sbin directory; else, as root with apt-get, installed with
 * `apt-get install -y haproxy` (after `apt-get update` when the package lists are missing), saying so in one line;
 * else HaproxyMissing with the one line saying how to get it.
 */
export async function findOrInstallHaproxy(env: Readonly<Record<string, string | undefined>>, logFile: string, say: (line: string) => void): Promise<string> {
  const found = onPath("haproxy", env);
  if (found) return found;
  const apt = onPath("apt-get", env);
  if (!apt || process.getuid?.() !== 0) throw new HaproxyMissing(`HAProxy is needed by the cluster and is not installed: ${HOW_TO_GET_IT}`);
  say(`HAProxy is not installed: installing it from the system's packages (apt-get install -y haproxy, as root; output in ${logFile})`);
  const install = () => run(apt, ["install", "-y", "--no-install-recommends", "haproxy"], logFile);
  if ((await install()) !== 0 && (await run(apt, ["update"], logFile)) === 0) await install();
  const installed = onPath("haproxy", env);
  if (!installed) throw new HaproxyMissing(`HAProxy could not be installed with apt-get (see ${logFile}): ${HOW_TO_GET_IT}`);
  return installed;
}

/** `haproxy -c`: the configuration's problems, or undefined when it is valid. */
export async function checkConfig(haproxy: string, configFile: string, logFile: string): Promise<string | undefined> {
  return (await run(haproxy, ["-c", "-q", "-f", configFile], logFile)) === 0 ? undefined : `HAProxy refused its configuration ${configFile} (see ${logFile})`;
}

export interface BalancedGateway {
  readonly name: string;
  readonly port: number;
  /** Its plain-HTTP (rejecting) listener, or null. */
  readonly httpPort: number | null;
}

/**
 * The configuration: one TCP frontend for HTTPS (and one for plain HTTP unless `httpPort` is null), round robin over
 * the gateways. Each connection to a gateway starts with a PROXY protocol v2 header naming the client and comes
 * from PROXY_SOURCE, the one address the gateways trust. A gateway is in rotation while `GET /v1/status` answers 200
 * over HTTPS (checked every second; out after 2 failures, back after 2 successes). When none does (an election,
 * both cores down) the gateways still take the traffic as backups, so that clients get their 503 with Retry-After
 * instead of a closed connection. The plain listener follows the HTTPS one's checks.
 */
export function haproxyConfig(options: { host: string; port: number; httpPort: number | null; gateways: readonly BalancedGateway[] }): string {
  const backend = (name: string, port: (g: BalancedGateway) => number, check: (g: BalancedGateway) => string, healthChecked: boolean) => [
    `backend ${name}`,
    "  balance roundrobin",
    `  source ${PROXY_SOURCE}`,
    ...(healthChecked
      ? ["  option httpchk", "  http-check send meth GET uri /v1/status ver HTTP/1.1 hdr Host localhost", "  http-check expect status 200"]
      : []),
    // Backups are not checked: a dead one refuses the connection and the connection goes to another (redispatch).
    "  option allbackups",
    ...options.gateways.map((g) => `  server ${g.name} 127.0.0.1:${port(g)} send-proxy-v2 ${check(g)}`),
    ...options.gateways.map((g) => `  server ${g.name}-backup 127.0.0.1:${port(g)} send-proxy-v2 backup`),
    "",
  ];
  const plain = options.httpPort !== null && options.gateways.every((g) => g.httpPort !== null);
  return [
    "# Written by `rms cluster` at every start; edits are lost.",
    "global",
    "  maxconn 8192",
    "",
    "defaults",
    "  mode tcp",
    "  timeout connect 2s",
    "  timeout client 60s",
    "  timeout server 60s",
    "  timeout check 2s",
    "  retries 2",
    "  option redispatch",
    "",
    "frontend https",
    `  bind ${options.host}:${options.port}`,
    "  default_backend gateways_https",
    "",
    ...backend(
      "gateways_https",
      (g) => g.port,
      () => "check check-ssl verify none inter 1s fall 2 rise 2",
      true,
    ),
    ...(plain
      ? [
          "frontend http",
          `  bind ${options.host}:${options.httpPort}`,
          "  default_backend gateways_http",
          "",
          ...backend(
            "gateways_http",
            (g) => g.httpPort!,
            (g) => `track gateways_https/${g.name}`,
            false,
          ),
        ]
      : []),
  ].join("\n");
}
