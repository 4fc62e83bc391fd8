import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { cacheDir, type Env } from "./cache.js";
import { withLock } from "./lock.js";

const run = promisify(execFile);

/** de.bwaldvogel:mongo-java-server, the embedded engine (Java, jars fetched with Maven). */
export const MONGO_JAVA_SERVER_VERSION = "1.47.0";
const MAIN_CLASS = "RmsMongoJavaServer";

/** What it keeps its data in: an H2 MVStore file (durable, for npm start) or the heap (tests). */
export type MongoJavaServerStorage = "h2" | "memory";

/** The heap bound: keeps the server's resident memory under 400 MB with no loss of speed (docs/database.md). */
export const MONGO_JAVA_SERVER_HEAP = "256m";

const POM = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rms</groupId>
  <artifactId>mongo-java-server-runner</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>de.bwaldvogel</groupId><artifactId>mongo-java-server-h2-backend</artifactId><version>${MONGO_JAVA_SERVER_VERSION}</version></dependency>
    <dependency><groupId>de.bwaldvogel</groupId><artifactId>mongo-java-server-memory-backend</artifactId><version>${MONGO_JAVA_SERVER_VERSION}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>2.0.17</version></dependency>
  </dependencies>
</project>
`;

// Serves an H2 file or memory; exits when stdin closes, so it never outlives its parent.
const MAIN = `import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.bson.Document;
import io.netty.channel.Channel;

public class ${MAIN_CLASS} {
  /**
   * H2Backend leaves its MVStore to commit on a timer (about once a second), so a write the client saw
   * acknowledged could vanish when the process is killed. Here every command that changed the store is
   * committed before its answer is sent: the committed chunk is written to the file (the OS keeps it
   * when the process dies; a power cut may still lose what the disk had not flushed).
   */
  static final class CommittingH2Backend extends H2Backend {
    CommittingH2Backend(String file) { super(file); }

    @Override
    public Document handleCommand(Channel channel, String database, String command, Document query) {
      try {
        return super.handleCommand(channel, database, command, query);
      } finally {
        if (getMvStore().hasUnsavedChanges()) commit();
      }
    }
  }

  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    MongoBackend backend = args[1].equals("memory") ? new MemoryBackend() : new CommittingH2Backend(args[1]);
    // Its own versions report wire version 8 at most, which the mongodb driver 7 refuses (it needs 9+).
    // Claim 5.0 (wire version 13); what it really implements is what the engine-feature tests record.
    backend.version(new MongoVersion() {
      public java.util.List<Integer> getVersionArray() { return java.util.List.of(5, 0, 0); }
      public int getWireVersion() { return 13; }
    });
    MongoServer server = new MongoServer(backend);
    server.bind("127.0.0.1", port);
    Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow));
    System.err.println("mongo-java-server ${MONGO_JAVA_SERVER_VERSION} (" + backend + ") listening on 127.0.0.1:" + port);
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

/** mongo-java-server's jars (fetched with Maven) and a compiled runner, cached outside the repository. */
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
      const e = error as { stderr?: string; stdout?: string; code?: string };
      if (e.code === "ENOENT") throw new Error("could not set up mongo-java-server: it needs java, javac and mvn on PATH");
      throw new Error(`could not set up mongo-java-server: ${(e.stderr || e.stdout || String(error)).trim().split("\n").slice(-5).join(" ")}`);
    }
    return { dir, version: MONGO_JAVA_SERVER_VERSION };
  });
}

/** The H2 file of a data directory. */
export function h2File(dataDir: string): string {
  return join(dataDir, "mongo-java-server.mv");
}

/** `java` arguments serving `storage` (the H2 file in `dataDir`, or memory) on `port`. */
export function mongoJavaServerArgs(server: MongoJavaServer, storage: MongoJavaServerStorage, dataDir: string, port: number): string[] {
  return [
    `-Xmx${MONGO_JAVA_SERVER_HEAP}`,
    // Out of heap, a server that limps on answers wrongly; dying makes the launcher's caller see it.
    "-XX:+ExitOnOutOfMemoryError",
    "-cp",
    `${join(server.dir, "lib", "*")}:${server.dir}`,
    MAIN_CLASS,
    String(port),
    storage === "memory" ? "memory" : h2File(dataDir),
  ];
}
