// The deployment artifacts (CONTRACT.md section 10, "Deployment"), checked as far as a machine without a container
// engine can: the Dockerfile starts exactly the scripts the launcher and the tests start (deploy/image/processes.json),
// and the Helm chart lints, renders, passes kube-score, and gives each process exactly the variables it reads.
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { promisify } from "node:util";
import { parseClientsFile, SERVED_METHODS } from "@rms/core/clients";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "../paths.js";
import { entryPoint, PROCESS_KINDS, processTable } from "../stack/entry-points.js";
import { serviceNodeFlags, workerNodeFlags } from "../stack/heap.js";
import { ensureGoTool, GO_TOOLS, goVersion } from "../testutil/go-tools.js";

const execFileAsync = promisify(execFile);
const read = (path: string) => readFileSync(join(repoRoot, path), "utf8");
const table = processTable();

// ---------------------------------------------------------------------------------------------------------------
// The image

interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

/** The Dockerfile's instructions per stage (continuation lines joined, comments dropped); the last stage is the image. */
function dockerfileStages(text: string): Instruction[][] {
  const stages: Instruction[][] = [[]];
  const logical = text
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
  for (const line of logical) {
    const [keyword = "", ...rest] = line.split(/\s+/);
    const instruction = { keyword: keyword.toUpperCase(), args: rest.join(" ") };
    if (instruction.keyword === "FROM") stages.push([]);
    stages[stages.length - 1]!.push(instruction);
  }
  return stages;
}

const dockerfile = read("Dockerfile");
const stages = dockerfileStages(dockerfile);
const image = stages[stages.length - 1]!;
const arg = (name: string) => stages[0]!.find((i) => i.keyword === "ARG" && i.args.startsWith(`${name}=`))?.args.slice(name.length + 1);
const only = (keyword: string) => image.filter((i) => i.keyword === keyword);
const exec = (keyword: string) => JSON.parse(only(keyword).at(-1)?.args ?? "null") as string[] | null;
const workdir = only("WORKDIR").at(-1)?.args ?? "/";
const entrypoint = exec("ENTRYPOINT")!;

describe("the container image", () => {
  it("starts, by command, the scripts that npm start and the tests start (deploy/image/processes.json)", () => {
    for (const kind of PROCESS_KINDS) {
      expect(entryPoint(kind)).toBe(join(repoRoot, table[kind]!));
      expect(existsSync(entryPoint(kind)), `${table[kind]} is built`).toBe(true);
    }
    expect(Object.keys(table).sort()).toEqual(["core", "gateway", "probe", "rms", "worker"]);
    expect(entrypoint).toEqual(["node", "deploy/image/rms-entrypoint.mjs"]);
    expect(read("deploy/image/rms-entrypoint.mjs")).toContain('new URL("processes.json", import.meta.url)');
    expect(Object.keys(table)).toContain(exec("CMD")?.[0]);
    // What the image holds: every workspace's dist/ (built by turbo) and deploy/image/, at the same paths.
    for (const script of Object.values(table)) expect(script).toMatch(/^(apps|packages)\/[\w-]+\/dist\/|^deploy\/image\//);
    expect(dockerfile).toMatch(/for package in apps\/\* packages\/\*; do/);
    expect(only("COPY").map((i) => i.args)).toEqual(expect.arrayContaining(["--from=build /dist/ ./", "deploy/image/ deploy/image/"]));
    expect(workdir).toBe("/app");
  });

  it("every other place that starts a process script by path names one of processes.json's", () => {
    // Literal script paths in sources and scripts (the bench, fuzz and core's own process tests do not use entryPoint()).
    const scripts = new Set(Object.values(table));
    const found: string[] = [];
    const visit = (dir: string) => {
      for (const name of readdirSync(join(repoRoot, dir))) {
        const path = join(dir, name);
        if (name === "node_modules" || name === "dist" || name === "gen") continue;
        if (statSync(join(repoRoot, path)).isDirectory()) visit(path);
        else if (/\.(ts|mjs|js|sh)$/.test(name)) {
          for (const [, literal] of read(path).matchAll(/["'`(\s]((?:\.\.\/)+dist\/[\w/.-]+\.js|apps\/[\w-]+\/dist\/[\w/.-]+\.js)["'`)\s]/g)) {
            const script = literal!.startsWith("apps/") ? literal! : relative(repoRoot, resolve(repoRoot, dirname(path), literal!));
            if (/\/(main|rms)\.js$/.test(script)) found.push(`${path}: ${script}`);
          }
        }
      }
    };
    for (const dir of ["apps", "packages", "scripts"]) visit(dir);
    expect(found.length).toBeGreaterThan(5);
    expect(found.filter((entry) => !scripts.has(entry.split(": ")[1]!))).toEqual([]);
  });

  it("is one multi-stage build on an official Node 24 slim base: npm ci, turbo run build, production dependencies only", () => {
    expect(arg("NODE_IMAGE")).toMatch(/^node:24(\.\d+){0,2}(-[a-z]+)?-slim(@sha256:[0-9a-f]{64})?$/);
    for (const stage of stages.slice(1)) expect(stage[0]!.args).toMatch(/^\$\{NODE_IMAGE\}( AS [a-z]+)?$/);
    const runs = stages.flat().filter((i) => i.keyword === "RUN");
    expect(runs.some((i) => /^npm ci --no-audit/.test(i.args))).toBe(true);
    expect(runs.some((i) => /npx turbo run build/.test(i.args))).toBe(true);
    expect(runs.some((i) => /npm ci --omit=dev --ignore-scripts/.test(i.args))).toBe(true);
  });

  it("installs from a lockfile that npm ci accepts (every platform's optional packages listed)", async () => {
    // The manifests the image's first stage copies, checked by `npm ci --dry-run` offline: a lockfile written with
    // only this platform's optional binaries (turbo, biome) is refused by npm ci, and the image would not build.
    const copy = mkdtempSync(join(tmpdir(), "rms-manifests-"));
    try {
      const manifests = ["package.json", "package-lock.json"];
      for (const dir of ["apps", "packages"]) {
        for (const name of readdirSync(join(repoRoot, dir)))
          if (existsSync(join(repoRoot, dir, name, "package.json"))) manifests.push(join(dir, name, "package.json"));
      }
      for (const manifest of manifests) {
        mkdirSync(dirname(join(copy, manifest)), { recursive: true });
        copyFileSync(join(repoRoot, manifest), join(copy, manifest));
      }
      const result = await execFileAsync("npm", ["ci", "--dry-run", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"], { cwd: copy }).then(
        () => "accepted",
        (error: { stderr?: string }) => (error.stderr ?? "").split("\n").filter((line) => /npm error (`npm ci`|Missing|Invalid)/.test(line)),
      );
      expect(result).toBe("accepted");
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it("runs as a numeric non-root user with NODE_ENV=production, no HEALTHCHECK and no secret", () => {
    const user = only("USER").at(-1)?.args ?? "";
    expect(user).toMatch(/^[1-9]\d*:[1-9]\d*$/);
    expect(only("ENV").map((i) => i.args)).toContain("NODE_ENV=production");
    expect(stages.flat().filter((i) => i.keyword === "HEALTHCHECK")).toEqual([]);
    const declared = stages.flat().filter((i) => i.keyword === "ENV" || i.keyword === "ARG");
    expect(declared.filter((i) => /TOKEN|SECRET|PASSWORD|MONGODB_URI|_KEY/i.test(i.args))).toEqual([]);
    const ignore = read(".dockerignore").split("\n");
    expect(ignore.find((line) => line.trim() !== "" && !line.startsWith("#"))).toBe("*");
    expect(ignore).toEqual(expect.arrayContaining(["**/.data", "**/node_modules", "**/dist"]));
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The chart

const CHART = join(repoRoot, "deploy", "helm", "rms");
const NAMESPACE = "rms-test";
/** The Kubernetes release the chart is rendered and scored for (helm built by go install would assume 1.20). */
const KUBE_VERSION = "1.31";
const VALUE_SETS = {
  default: [] as string[],
  "external replica set": ["-f", join(CHART, "values-external-replicaset.yaml")],
  // Internal services with entries in core's caller table (docs/internal-clients.md).
  "internal clients": ["-f", join(CHART, "values-internal-clients.yaml")],
  // Tracing on (docs/observability.md, "Tracing"): the OTEL_* variables of `tracing.env`, to every process.
  tracing: [
    "--set",
    "tracing.env.OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector:4318",
    "--set",
    "tracing.env.OTEL_TRACES_SAMPLER=parentbased_traceidratio",
    "--set-string",
    "tracing.env.OTEL_TRACES_SAMPLER_ARG=0.1",
    // The collector's API key from a Secret (issue 31).
    "--set",
    "tracing.headersSecret.name=otel-collector-auth",
  ],
};

/**
 * kube-score checks left out, each for a reason:
 * - container-image-pull-policy wants Always; the chart pins a tag (or digest) and uses IfNotPresent, so a pod
 *   restarts on a node that has the image even while the registry is unreachable.
 */
const KUBE_SCORE_IGNORED = ["container-image-pull-policy"];
/** Optional kube-score checks the chart meets and keeps meeting. */
const KUBE_SCORE_OPTIONAL = ["container-seccomp-profile", "container-ports-check"];

type Manifest = { kind: string; metadata: { name: string; labels?: Record<string, string> }; spec?: Record<string, unknown>; [key: string]: unknown };
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}
interface Probe {
  exec?: { command: string[] };
  httpGet?: { path: string; port: string | number; scheme?: string };
}
interface Container {
  name: string;
  args?: string[];
  command?: string[];
  env: EnvVar[];
  ports?: { name: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  securityContext: Record<string, unknown>;
  resources: { requests: Record<string, string>; limits: Record<string, string> };
}

/** The environment variables a process's config reads, from its sources: the schema keys, settings and CORE_TLS_*. */
function variablesRead(files: readonly string[]): Set<string> {
  const names = new Set<string>();
  for (const file of files) {
    const text = read(file);
    for (const [, name] of text.matchAll(/^\s+([A-Z][A-Z0-9_]*): /gm)) names.add(name!);
    for (const [, name] of text.matchAll(/"(CORE_TLS_[A-Z_]+)"/g)) names.add(name!);
    for (const [, name] of text.matchAll(/"(OTEL_[A-Z_]+)"/g)) names.add(name!);
  }
  return names;
}
const TLS_SOURCE = "packages/proto/src/grpc/client.ts";
/** The OTEL_* variables every process reads (tracing, @rms/telemetry). */
const TRACING_SOURCE = "packages/telemetry/src/config.ts";
/** What node itself reads, for every process: its V8 flags (the launcher's, heap.ts). */
const NODE_READS = ["NODE_OPTIONS"];
const READS = {
  gateway: new Set([...variablesRead(["apps/gateway/src/config.ts", TLS_SOURCE, TRACING_SOURCE]), ...NODE_READS]),
  core: new Set([...variablesRead(["apps/core/src/config.ts", "apps/core/src/settings.ts", TLS_SOURCE, TRACING_SOURCE]), ...NODE_READS]),
  worker: new Set([...variablesRead(["apps/core/src/worker/config.ts", "apps/core/src/settings.ts", TRACING_SOURCE]), ...NODE_READS]),
};

const goLine = await goVersion(process.env);
const NO_GO = "no Go toolchain: install Go 1.22 or newer (`go` on PATH) so the test can build helm and kube-score";
if (!goLine) process.stderr.write(`deploy: the Helm chart checks are skipped: ${NO_GO}\n`);

describe.skipIf(!goLine)("the Helm chart (deploy/helm/rms)", () => {
  let helm = "";
  let kubeScore = "";
  // helm keeps its config, cache and data here, not in the home directory.
  const helmHome = mkdtempSync(join(tmpdir(), "rms-helm-"));
  const helmEnv = {
    ...process.env,
    HELM_CACHE_HOME: join(helmHome, "cache"),
    HELM_CONFIG_HOME: join(helmHome, "config"),
    HELM_DATA_HOME: join(helmHome, "data"),
  };
  const rendered: Record<string, { text: string; manifests: Manifest[] }> = {};

  beforeAll(async () => {
    const say = (line: string) => process.stderr.write(`deploy: ${line}\n`);
    helm = await ensureGoTool("helm", process.env, say);
    kubeScore = await ensureGoTool("kube-score", process.env, say);
    for (const [name, values] of Object.entries(VALUE_SETS)) {
      const { stdout } = await execFileAsync(helm, ["template", "rms", CHART, "--namespace", NAMESPACE, "--kube-version", `${KUBE_VERSION}.0`, ...values], {
        env: helmEnv,
      });
      const manifests = parseAllDocuments(stdout)
        .map((document) => document.toJS() as Manifest | null)
        .filter((m): m is Manifest => m !== null);
      rendered[name] = { text: stdout, manifests };
    }
  }, 900_000);
  afterAll(() => rmSync(helmHome, { recursive: true, force: true }));

  it(`is linted clean by helm ${GO_TOOLS.helm.version} (--strict), with each set of values`, async () => {
    for (const values of Object.values(VALUE_SETS)) {
      const { stdout } = await execFileAsync(helm, ["lint", "--strict", CHART, "--namespace", NAMESPACE, "--kube-version", `${KUBE_VERSION}.0`, ...values], {
        env: helmEnv,
      });
      expect(stdout).toContain("1 chart(s) linted, 0 chart(s) failed");
    }
  });

  it(`renders manifests that kube-score ${GO_TOOLS["kube-score"].version} scores without a warning`, async () => {
    for (const [name, { text }] of Object.entries(rendered)) {
      const args = ["score", "--output-format", "ci", "--exit-one-on-warning", "--kubernetes-version", `v${KUBE_VERSION}`];
      for (const test of KUBE_SCORE_IGNORED) args.push("--ignore-test", test);
      for (const test of KUBE_SCORE_OPTIONAL) args.push("--enable-optional-test", test);
      const result = await new Promise<{ code: number; output: string }>((done) => {
        const child = execFile(kubeScore, [...args, "-"], (error, stdout, stderr) =>
          done({ code: error ? Number(error.code ?? 1) : 0, output: stdout + stderr }),
        );
        child.stdin!.end(text);
      });
      const problems = result.output.split("\n").filter((line) => /^\[(WARNING|CRITICAL)\]/.test(line));
      expect({ values: name, problems }).toEqual({ values: name, problems: [] });
      expect(result.code, result.output).toBe(0);
      expect(result.output).toMatch(/^\[OK\] /m);
    }
  });

  for (const name of Object.keys(VALUE_SETS)) {
    describe(`rendered with the ${name} values`, () => {
      const manifests = () => rendered[name]!.manifests;
      const find = (kind: string, component: string) => {
        const found = manifests().filter((m) => m.kind === kind && m.metadata.labels?.["app.kubernetes.io/component"] === component);
        expect(found, `${kind} of ${component}`).toHaveLength(1);
        return found[0]!;
      };
      const podSpec = (component: string) => (find("Deployment", component).spec as { template: { spec: Record<string, unknown> } }).template.spec;
      const container = (component: string) => {
        const containers = podSpec(component).containers as Container[];
        expect(containers).toHaveLength(1);
        return containers[0]!;
      };
      const envOf = (c: Container) => new Map(c.env.map((e) => [e.name, e]));

      it("runs each process by the image's command, with exactly the variables that process reads", () => {
        for (const kind of PROCESS_KINDS) {
          const c = container(kind);
          expect(c.command).toBeUndefined();
          expect(c.args).toEqual([kind]);
          const names = c.env.map((e) => e.name);
          expect(new Set(names).size, "no variable twice").toBe(names.length);
          expect(names.filter((n) => !READS[kind].has(n))).toEqual([]);
        }
        const required = {
          gateway: [
            "MONGODB_URI",
            "RMS_GATEWAY_TOKEN",
            "CORE_ADDR",
            "PORT",
            "TLS_CERT_FILE",
            "TLS_KEY_FILE",
            "CORE_TLS_CERT_FILE",
            "CORE_TLS_KEY_FILE",
            "CORE_TLS_CA_FILE",
          ],
          core: [
            "MONGODB_URI",
            "RMS_ADMIN_TOKEN",
            "RMS_GATEWAY_TOKEN",
            "RMS_SECRET_KEY",
            "CORE_ADDR",
            "CORE_TLS_CERT_FILE",
            "CORE_TLS_KEY_FILE",
            "CORE_TLS_CA_FILE",
          ],
          worker: ["MONGODB_URI", "RMS_SECRET_KEY", "WORKER_METRICS_PORT"],
        };
        for (const kind of PROCESS_KINDS) expect([...envOf(container(kind)).keys()]).toEqual(expect.arrayContaining(required[kind]));
        // Least privilege: the gateway never holds the admin token, a worker no token at all.
        expect(envOf(container("gateway")).has("RMS_ADMIN_TOKEN")).toBe(false);
        expect([...envOf(container("worker")).keys()].filter((n) => n.endsWith("_TOKEN"))).toEqual([]);
        // Several gateways share their rate limits.
        expect(envOf(container("gateway")).get("RATE_LIMIT_STORE")?.value).toBe("mongodb");
      });

      it("starts each process with the V8 heap flags the launcher gives it (heap.ts), through NODE_OPTIONS", () => {
        const expected = { gateway: serviceNodeFlags(), core: serviceNodeFlags(), worker: workerNodeFlags() };
        for (const kind of PROCESS_KINDS) expect(envOf(container(kind)).get("NODE_OPTIONS")?.value?.split(" "), kind).toEqual(expected[kind]);
      });

      it("gives every process the OTEL_* variables of tracing.env, and none without", () => {
        for (const kind of PROCESS_KINDS) {
          const otel = container(kind).env.filter((e) => e.name.startsWith("OTEL_"));
          if (name === "tracing") {
            expect(Object.fromEntries(otel.map((e) => [e.name, e.value ?? e.valueFrom]))).toEqual({
              OTEL_EXPORTER_OTLP_ENDPOINT: "http://otel-collector:4318",
              OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
              OTEL_TRACES_SAMPLER_ARG: "0.1",
              OTEL_EXPORTER_OTLP_HEADERS: { secretKeyRef: { name: "otel-collector-auth", key: "OTEL_EXPORTER_OTLP_HEADERS" } },
            });
          } else expect(otel).toEqual([]);
        }
      });

      it("takes credentials from Secrets, and every file a variable names from a mounted Secret", () => {
        const secrets = manifests().filter((m) => m.kind === "Secret");
        for (const kind of PROCESS_KINDS) {
          const c = container(kind);
          for (const e of c.env.filter((e) => /TOKEN|SECRET_KEY|MONGODB_URI/.test(e.name))) {
            expect(e.value, `${kind} ${e.name} is not inline`).toBeUndefined();
            const ref = e.valueFrom!.secretKeyRef!;
            const secret = secrets.find((s) => s.metadata.name === ref.name) as
              | { data?: Record<string, string>; stringData?: Record<string, string> }
              | undefined;
            expect(secret, `${kind} ${e.name}: Secret ${ref.name}`).toBeDefined();
            expect(Object.keys({ ...secret!.data, ...secret!.stringData })).toContain(ref.key);
          }
          const volumes = podSpec(kind).volumes as { name: string; secret?: { secretName: string } }[];
          for (const e of c.env.filter((e) => e.name.endsWith("_FILE"))) {
            const mount = c.volumeMounts?.find((m) => e.value!.startsWith(`${m.mountPath}/`));
            expect(mount, `${kind} ${e.name}=${e.value} is under a mount`).toBeDefined();
            expect(volumes.find((v) => v.name === mount!.name)?.secret?.secretName).toBeTruthy();
          }
        }
        // The gateway and core each present their own certificate on the core link.
        const secretOf = (kind: string) =>
          (podSpec(kind).volumes as { name: string; secret?: { secretName: string } }[]).find((v) => v.name === "core-tls")!.secret!.secretName;
        expect(secretOf("gateway")).not.toBe(secretOf("core"));
        const generated = secrets.find((s) => s.metadata.name === "rms") as unknown as { data: Record<string, string> };
        const key = Buffer.from(generated.data.RMS_SECRET_KEY!, "base64").toString();
        expect(key).toMatch(/^[0-9a-f]{64}$/);
        const tokens = ["RMS_ADMIN_TOKEN", "RMS_GATEWAY_TOKEN"].map((t) => Buffer.from(generated.data[t]!, "base64").toString());
        expect(tokens[0]!.length).toBeGreaterThanOrEqual(16);
        expect(tokens[0]).not.toBe(tokens[1]);
      });

      it("gives core the caller table of `clients` from a Secret, as a file core's own checks take", () => {
        const file = envOf(container("core")).get("CORE_CLIENTS_FILE");
        if (name !== "internal clients") {
          expect(file).toBeUndefined();
          return;
        }
        expect(file?.value).toBe("/etc/rms/clients/clients.json");
        const secret = manifests().find((m) => m.kind === "Secret" && m.metadata.name === "rms-clients") as unknown as { stringData: Record<string, string> };
        const entries = parseClientsFile(secret.stringData["clients.json"]!, SERVED_METHODS, "rms-clients");
        expect(entries.map((e) => e.client.name)).toEqual(["billing", "reports"]);
        // A changed table rolls core's pods: they read the file at start.
        const annotations = (find("Deployment", "core").spec as { template: { metadata: { annotations?: Record<string, string> } } }).template.metadata
          .annotations;
        expect(annotations?.["checksum/clients"]).toMatch(/^[0-9a-f]{64}$/);
      });

      it("puts the MongoDB URI of the values into the Secret the processes read it from", () => {
        const uri = name !== "external replica set" ? "mongodb://mongodb:27017/?replicaSet=rs0" : "mongodb://m1,m2,m3/?replicaSet=rs0";
        const secret = manifests().find((m) => m.kind === "Secret" && m.metadata.name === "rms-mongodb") as unknown as { stringData: Record<string, string> };
        expect(secret.stringData.MONGODB_URI).toBe(uri);
      });

      it("probes the gateway on GET /v1/status over HTTPS, core on gRPC health and the worker on its /metrics", () => {
        const gateway = container("gateway");
        const https = gateway.ports!.find((p) => p.name === "https")!;
        expect(String(https.containerPort)).toBe(envOf(gateway).get("PORT")!.value);
        expect(gateway.readinessProbe?.httpGet).toEqual({ path: "/v1/status", port: "https", scheme: "HTTPS" });
        expect(gateway.livenessProbe?.httpGet).toEqual({ path: "/v1/openapi.json", port: "https", scheme: "HTTPS" });
        const probe = (check: string) => ["node", `${workdir}/${entrypoint[1]}`, "probe", check];
        const core = container("core");
        expect(core.readinessProbe?.exec?.command).toEqual(probe("core-ready"));
        expect(core.livenessProbe?.exec?.command).toEqual(probe("core-live"));
        expect(core.startupProbe?.exec?.command).toEqual(probe("core-live"));
        const grpcPort = core.ports!.find((p) => p.name === "grpc")!.containerPort;
        expect(envOf(core).get("CORE_ADDR")!.value).toBe(`0.0.0.0:${grpcPort}`);
        expect(container("worker").livenessProbe?.exec?.command).toEqual(probe("worker"));
      });

      it("exposes the gateway on 443 -> its HTTPS port and core's gRPC port, the gateway dialling core by its Service name", () => {
        const gatewayService = find("Service", "gateway").spec as { ports: { name: string; port: number; targetPort: string }[] };
        expect(gatewayService.ports).toContainEqual(expect.objectContaining({ name: "https", port: 443, targetPort: "https" }));
        const coreService = find("Service", "core").spec as { ports: { port: number; targetPort: string }[] };
        const grpcPort = container("core").ports!.find((p) => p.name === "grpc")!.containerPort;
        expect(coreService.ports).toEqual([expect.objectContaining({ port: grpcPort, targetPort: "grpc" })]);
        expect(envOf(container("gateway")).get("CORE_ADDR")!.value).toBe(`${find("Service", "core").metadata.name}.${NAMESPACE}.svc:${grpcPort}`);
      });

      it("lets only the gateways and the operator's pods reach core, and gives each process kind a disruption budget", () => {
        const policy = find("NetworkPolicy", "core").spec as {
          podSelector: { matchLabels: Record<string, string> };
          ingress: { from: { podSelector: { matchLabels: Record<string, string> } }[]; ports: { port: string }[] }[];
        };
        expect(policy.podSelector.matchLabels["app.kubernetes.io/component"]).toBe("core");
        expect(policy.ingress).toHaveLength(1);
        expect(policy.ingress[0]!.ports).toEqual([{ port: "grpc", protocol: "TCP" }]);
        expect(policy.ingress[0]!.from.map((f) => f.podSelector.matchLabels)).toEqual([
          (find("Deployment", "gateway").spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels,
          { "rms.example/operator": "true" },
          // The internal services' pods, once core has entries for them.
          ...(name === "internal clients" ? [{ "rms.example/core-client": "true" }] : []),
        ]);
        for (const kind of PROCESS_KINDS) {
          const budget = find("PodDisruptionBudget", kind).spec as { selector: unknown; maxUnavailable: number };
          expect(budget.selector).toEqual((find("Deployment", kind).spec as { selector: unknown }).selector);
          expect(budget.maxUnavailable).toBeGreaterThan(0);
        }
      });

      // Issue 31, item 9: egress is no longer open for every pod.
      it(
        "limits egress: gateway and core reach MongoDB, DNS, the collector (and the gateway core) only; workers the internet minus private, " +
          "link-local and metadata ranges",
        () => {
          type Peer = { podSelector?: { matchLabels: Record<string, string> }; namespaceSelector?: unknown; ipBlock?: { cidr: string; except?: string[] } };
          type Rule = { to?: Peer[]; ports?: { port: number | string; protocol: string }[] };
          const egress = (kind: string) => (find("NetworkPolicy", kind).spec as { egress: Rule[]; policyTypes: string[] }).egress;
          const portsOf = (rules: Rule[]) => rules.flatMap((r) => (r.ports ?? []).map((p) => `${p.protocol}/${p.port}`)).sort();
          const collector = name === "tracing" ? ["TCP/4317", "TCP/4318"] : [];
          for (const kind of ["core", "gateway", "worker"]) {
            expect((find("NetworkPolicy", kind).spec as { policyTypes: string[] }).policyTypes).toContain("Egress");
            for (const rule of egress(kind).filter((r) => !r.to?.some((p) => p.ipBlock)))
              expect(rule.ports?.length, `${kind}: a rule without ports`).toBeGreaterThan(0);
          }
          expect(portsOf(egress("core"))).toEqual(["TCP/27017", "TCP/53", "UDP/53", ...collector].sort());
          const grpcPort = container("core").ports!.find((p) => p.name === "grpc")!.containerPort;
          expect(portsOf(egress("gateway"))).toEqual(["TCP/27017", "TCP/53", "UDP/53", `TCP/${grpcPort}`, ...collector].sort());
          const toCore = egress("gateway").find((r) => r.ports?.some((p) => p.port === grpcPort))!;
          expect(toCore.to).toEqual([
            { podSelector: { matchLabels: (find("Deployment", "core").spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels } },
          ]);
          for (const kind of ["core", "gateway"]) expect(egress(kind).some((r) => r.to?.some((p) => p.ipBlock))).toBe(false);
          const internet = egress("worker").find((r) => r.to?.some((p) => p.ipBlock))!;
          expect(internet.ports).toBeUndefined();
          const v4 = internet.to!.find((p) => p.ipBlock!.cidr === "0.0.0.0/0")!.ipBlock!.except!;
          for (const denied of ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "127.0.0.0/8", "100.64.0.0/10"])
            expect(v4).toContain(denied);
          const v6 = internet.to!.find((p) => p.ipBlock!.cidr === "::/0")!.ipBlock!.except!;
          for (const denied of ["fc00::/7", "fe80::/10", "::1/128"]) expect(v6).toContain(denied);
        },
      );

      it("runs every container as the image's numeric user, read-only, without capabilities, with requests and limits", () => {
        const [uid, gid] = (only("USER").at(-1)?.args ?? "").split(":").map(Number);
        for (const kind of PROCESS_KINDS) {
          expect(podSpec(kind).securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: uid, runAsGroup: gid });
          expect(podSpec(kind).automountServiceAccountToken).toBe(false);
          expect(container(kind).securityContext).toMatchObject({
            runAsNonRoot: true,
            readOnlyRootFilesystem: true,
            allowPrivilegeEscalation: false,
            capabilities: { drop: ["ALL"] },
          });
          expect(Object.keys(container(kind).resources.requests).sort()).toEqual(["cpu", "ephemeral-storage", "memory"]);
          expect(Object.keys(container(kind).resources.limits).sort()).toEqual(["cpu", "ephemeral-storage", "memory"]);
        }
      });

      it("replaces one pod at a time: a new pod first, an old one stopped only once the new one is ready", () => {
        for (const kind of PROCESS_KINDS) {
          expect((find("Deployment", kind).spec as { strategy: unknown }).strategy, kind).toEqual({
            type: "RollingUpdate",
            rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
          });
        }
        // A core listens, and so is ready, only once the migrations are done; its start may run them (the hook off).
        expect((container("core").startupProbe as { failureThreshold: number }).failureThreshold).toBe(60);
      });

      it("runs the new release's migrations before an upgrade: a pre-upgrade Job of `rms migrate up` with the new image and the database only", () => {
        const job = find("Job", "migrate") as Manifest & { metadata: { annotations: Record<string, string> } };
        expect(job.metadata.annotations).toMatchObject({ "helm.sh/hook": "pre-upgrade", "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded" });
        const spec = (job.spec as { template: { spec: { containers: Container[]; restartPolicy: string } } }).template.spec;
        expect(spec.restartPolicy).toBe("Never");
        const [migrate] = spec.containers;
        expect(migrate!.args).toEqual(["rms", "migrate", "up"]);
        expect((migrate as unknown as { image: string }).image).toBe((podSpec("core").containers as { image: string }[])[0]!.image);
        const names = migrate!.env.map((e) => e.name);
        expect(names.filter((n) => !["MONGODB_URI", "MONGODB_DATABASE", "LOG_LEVEL"].includes(n) && !n.startsWith("OTEL_"))).toEqual([]);
        expect(names.filter((n) => n.endsWith("_TOKEN") || n === "RMS_SECRET_KEY")).toEqual([]);
        expect(migrate!.securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
        // It exists before the Job runs (a hook of a lower weight), and lets the Job reach MongoDB and DNS only.
        const policy = find("NetworkPolicy", "migrate") as Manifest & {
          metadata: { annotations: Record<string, string> };
          spec: { egress: { ports?: { port: number }[] }[] };
        };
        expect(policy.metadata.annotations).toMatchObject({ "helm.sh/hook": "pre-upgrade", "helm.sh/hook-weight": "-1" });
        expect(
          policy.spec.egress.flatMap((r) => (r.ports ?? []).map((p) => p.port)).filter((p) => p !== 27017 && p !== 53 && p !== 4317 && p !== 4318),
        ).toEqual([]);
      });

      it("uses the image of the chart's appVersion, the service's release", () => {
        const chart = read("deploy/helm/rms/Chart.yaml");
        const appVersion = /^appVersion: "(.+)"$/m.exec(chart)?.[1];
        expect(appVersion).toBe((JSON.parse(read("package.json")) as { version: string }).version);
        for (const kind of PROCESS_KINDS) expect((podSpec(kind).containers as { image: string }[])[0]!.image).toMatch(new RegExp(`:${appVersion}$`));
      });
    });
  }
});
