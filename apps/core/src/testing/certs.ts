// Test-only (exported as @rms/core/testing): a small certificate authority for core's mutual TLS, made at test time.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { generate } from "selfsigned";

export interface TestPki {
  /** The CA both ends trust. */
  readonly caFile: string;
  /** One certificate for localhost, 127.0.0.1 and ::1, good as server and as client, signed by the CA. */
  readonly certFile: string;
  readonly keyFile: string;
  /** The client certificates asked for, by name: signed by the CA, naming what was given as their SANs. */
  readonly clients: Readonly<Record<string, { readonly certFile: string; readonly keyFile: string }>>;
}

const DAY_MS = 86_400_000;

/**
 * Writes a fresh CA and a leaf certificate signed by it into `dir` (the files CORE_TLS_* name), and a client
 * certificate for each entry of `clients`, whose subject alternative names are its values (a `scheme://` one as a
 * URI, any other as a DNS name).
 */
export async function writeTestPki(dir: string, clients: Readonly<Record<string, readonly string[]>> = {}): Promise<TestPki> {
  const notBeforeDate = new Date(Date.now() - 60_000);
  const notAfterDate = new Date(notBeforeDate.getTime() + DAY_MS);
  const common = { keyType: "ec" as const, curve: "P-256" as const, algorithm: "sha256", notBeforeDate, notAfterDate };
  const ca = await generate([{ name: "commonName", value: "rms test CA" }], {
    ...common,
    extensions: [
      { name: "basicConstraints", cA: true },
      { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true },
    ],
  });
  const leaf = await generate([{ name: "commonName", value: "localhost" }], {
    ...common,
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      { name: "basicConstraints", cA: false },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
      { name: "extKeyUsage", serverAuth: true, clientAuth: true },
      {
        name: "subjectAltName",
        altNames: [
          { type: 2, value: "localhost" },
          { type: 7, ip: "127.0.0.1" },
          { type: 7, ip: "::1" },
        ],
      },
    ],
  });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const files = { caFile: join(dir, "ca.pem"), certFile: join(dir, "cert.pem"), keyFile: join(dir, "key.pem") };
  await writeFile(files.caFile, ca.cert, { mode: 0o600 });
  await writeFile(files.certFile, leaf.cert, { mode: 0o600 });
  await writeFile(files.keyFile, leaf.private, { mode: 0o600 });
  const made: Record<string, { certFile: string; keyFile: string }> = {};
  for (const [name, sans] of Object.entries(clients)) {
    const client = await generate([{ name: "commonName", value: name }], {
      ...common,
      ca: { key: ca.private, cert: ca.cert },
      extensions: [
        { name: "basicConstraints", cA: false },
        { name: "keyUsage", digitalSignature: true },
        { name: "extKeyUsage", clientAuth: true },
        { name: "subjectAltName", altNames: sans.map((san) => (san.includes("://") ? { type: 6, value: san } : { type: 2, value: san })) },
      ],
    });
    made[name] = { certFile: join(dir, `${name}.cert.pem`), keyFile: join(dir, `${name}.key.pem`) };
    await writeFile(made[name].certFile, client.cert, { mode: 0o600 });
    await writeFile(made[name].keyFile, client.private, { mode: 0o600 });
  }
  return { ...files, clients: made };
}
