import { X509Certificate } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { generate } from "selfsigned";

export interface TlsMaterial {
  readonly cert: string;
  readonly key: string;
}

/** Regenerate the development certificate when it expires within this many days. */
const RENEW_BEFORE_DAYS = 7;
const VALID_DAYS = 825;

async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

function stillValid(certPem: string): boolean {
  try {
    const cert = new X509Certificate(certPem);
    return new Date(cert.validTo).getTime() > Date.now() + RENEW_BEFORE_DAYS * 86_400_000;
  } catch {
    return false;
  }
}

/** Writes via a temporary file and a rename, so a concurrent reader never sees half a file. */
async function writeAtomically(path: string, text: string, mode: number): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, text, { mode });
  await rename(temporary, path);
}

/**
 * A self-signed certificate for localhost (127.0.0.1 and ::1 too), made on the
 * first start into `<dir>/cert.pem` + `<dir>/key.pem` and reused afterwards.
 */
export async function developmentCertificate(dir: string): Promise<TlsMaterial & { certFile: string; generated: boolean }> {
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  const [cert, key] = await Promise.all([readIfPresent(certFile), readIfPresent(keyFile)]);
  if (cert && key && stillValid(cert)) return { cert, key, certFile, generated: false };

  const notBefore = new Date(Date.now() - 60_000);
  const pems = await generate([{ name: "commonName", value: "localhost" }], {
    keyType: "ec",
    curve: "P-256",
    algorithm: "sha256",
    notBeforeDate: notBefore,
    notAfterDate: new Date(notBefore.getTime() + VALID_DAYS * 86_400_000),
    extensions: [
      { name: "basicConstraints", cA: false },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
      { name: "extKeyUsage", serverAuth: true },
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
  await writeAtomically(keyFile, pems.private, 0o600);
  await writeAtomically(certFile, pems.cert, 0o600); // owner-only like all of the data directory
  return { cert: pems.cert, key: pems.private, certFile, generated: true };
}

/** Where the certificate comes from: its files (TLS_CERT_FILE, TLS_KEY_FILE), or none for the development one. */
export interface TlsSource {
  readonly tls: { readonly certFile: string; readonly keyFile: string } | null;
  /** The development certificate is kept under `<dataDir>/tls`. */
  readonly dataDir: string;
}

/** The configured certificate files, or the development certificate under `<dataDir>/tls`. */
export async function loadTls(config: TlsSource): Promise<TlsMaterial & { generated: boolean; certFile: string }> {
  if (config.tls) {
    const [cert, key] = await Promise.all([readFile(config.tls.certFile, "utf8"), readFile(config.tls.keyFile, "utf8")]);
    return { cert, key, generated: false, certFile: config.tls.certFile };
  }
  return developmentCertificate(join(config.dataDir, "tls"));
}
