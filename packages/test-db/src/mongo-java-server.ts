import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { cacheDir, type Env } from "./cache.js";
import { withLock } from "./lock.js";

const run = promisify(execFile);

/** de.bwaldvogel:mongo-java-server, the last-resort engine (Java; no Go toolchain needed). */
export const MONGO_JAVA_SERVER_VERSION = "1.47.0";
const MAIN_CLASS = "RmsMongoJavaServer";

const POM = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rms</groupId>
  <artifactId>mongo-java-server-runner</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>de.bwaldvogel</groupId><artifactId>mongo-java-server-h2-backend</artifactId><version>${MONGO_JAVA_SERVER_VERSION}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>2.0.17</version></dependency>
  </dependencies>
</project>
`;

// Serves an H2 file (persistent) or memory; exits when stdin closes, so it never outlives its parent.
const MAIN = `import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.h2.H2Backend;

public class ${MAIN_CLASS} {
  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    H2Backend backend = args.length > 1 ? new H2Backend(args[1]) : H2Backend.inMemory();
    // Its own versions report wire version 8 at most, which the mongodb driver 7 refuses (it needs 9+).
    // Claim 5.0 (wire version 13); what it really implements is what the engine-feature tests record.
    backend.version(new MongoVersion() {
      public java.util.List<Integer> getVersionArray() { return java.util.List.of(5, 0, 0); }
      public int getWireVersion() { return 13; }
    });
    MongoServer server = new MongoServer(backend);
    server.bind("127.0.0.1", port);
    Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow));
    System.err.println("mongo-java-server ${MONGO_JAVA_SERVER_VERSION} listening on 127.0.0.1:" + port);
    while (System.in.read() != -1) {}
    System.exit(0);
  }
}
`;

export interface MongoJavaServer {
  /** Directory holding lib/*.jar and the compiled runner. */
  dir: string;
  version: string;
}

/** mongo-java-server's jars (fetched with Maven) and a compiled runner, cached like FerretDB. */
export async function ensureMongoJavaServer(options: { env?: Env; log?: (line: string) => void } = {}): Promise<MongoJavaServer> {
  const env = options.env ?? process.env;
  const root = join(cacheDir(env), "mongo-java-server");
  // The runner's source is part of the cache key, so a changed runner is rebuilt.
  const dir = join(root, `${MONGO_JAVA_SERVER_VERSION}-${createHash("sha256").update(POM).update(MAIN).digest("hex").slice(0, 8)}`);
  mkdirSync(root, { recursive: true });
  const cached = (): MongoJavaServer | undefined => (existsSync(join(dir, `${MAIN_CLASS}.class`)) ? { dir, version: MONGO_JAVA_SERVER_VERSION } : undefined);
  return withLock(join(root, ".lock"), cached, async () => {
    options.log?.(`fetching mongo-java-server ${MONGO_JAVA_SERVER_VERSION} with Maven (first run only)`);
    const work = mkdtempSync(join(root, ".build-"));
    try {
      writeFileSync(join(work, "pom.xml"), POM);
      writeFileSync(join(work, `${MAIN_CLASS}.java`), MAIN);
      await run("mvn", ["-q", "-B", "dependency:copy-dependencies", "-DoutputDirectory=lib"], { cwd: work, maxBuffer: 16 << 20 });
      await run("javac", ["-cp", join("lib", "*"), `${MAIN_CLASS}.java`], { cwd: work, maxBuffer: 16 << 20 });
      rmSync(dir, { recursive: true, force: true });
      renameSync(work, dir);
    } catch (error) {
      rmSync(work, { recursive: true, force: true });
      const e = error as { stderr?: string; stdout?: string };
      throw new Error(`could not set up mongo-java-server: ${(e.stderr || e.stdout || String(error)).trim().split("\n").slice(-5).join(" ")}`);
    }
    return { dir, version: MONGO_JAVA_SERVER_VERSION };
  });
}

/** `java` arguments serving `dataDir` (an H2 file in it) on `port`. */
export function mongoJavaServerArgs(server: MongoJavaServer, dataDir: string, port: number): string[] {
  return ["-cp", `${join(server.dir, "lib", "*")}:${server.dir}`, MAIN_CLASS, String(port), join(dataDir, "mongo-java-server.mv")];
}
