import { X509Certificate } from "node:crypto";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { developmentCertificate, loadTls } from "./tls.js";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});
const tempDir = async () => {
  const dir = await mkdtemp(join(tmpdir(), "rms-tls-"));
  dirs.push(dir);
  return dir;
};

describe("development certificate", () => {
  it("is made for localhost on first start and reused afterwards", async () => {
    const dataDir = await tempDir();
    const first = await loadTls({ tls: null, dataDir });
    expect(first.generated).toBe(true);
    const cert = new X509Certificate(first.cert);
    expect(cert.subjectAltName).toContain("DNS:localhost");
    expect(cert.subjectAltName).toContain("IP Address:127.0.0.1");
    expect(cert.checkPrivateKey((await import("node:crypto")).createPrivateKey(first.key))).toBe(true);
    expect((await stat(join(dataDir, "tls", "key.pem"))).mode & 0o077).toBe(0);

    const second = await loadTls({ tls: null, dataDir });
    expect(second.generated).toBe(false);
    expect(second.cert).toBe(first.cert);
  });

  it("uses the configured files when given", async () => {
    const dir = await tempDir();
    const made = await developmentCertificate(dir);
    const loaded = await loadTls({ tls: { certFile: join(dir, "cert.pem"), keyFile: join(dir, "key.pem") }, dataDir: "/nonexistent" });
    expect(loaded.cert).toBe(made.cert);
    expect(loaded.key).toBe(await readFile(join(dir, "key.pem"), "utf8"));
  });
});
