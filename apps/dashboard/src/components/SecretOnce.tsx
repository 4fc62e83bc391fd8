import { CopyButton } from "./CopyButton";

/** A new signing secret (or a v1a public key), shown once: the API never shows a secret again. */
export function SecretOnce({ endpoint }: { endpoint: { id: string; secret?: string; public_key: string | null; signature_scheme: string } }) {
  const secret = "secret" in endpoint && typeof endpoint.secret === "string" ? endpoint.secret : null;
  return (
    <div className="notice notice-ok" role="status">
      {secret ? (
        <>
          <p className="notice-title">Signing secret of {endpoint.id}: copy it now, it is shown only this once</p>
          <p>
            <code className="secret" data-testid="webhook-secret">
              {secret}
            </code>{" "}
            <CopyButton value={secret} label="Copy secret" />
          </p>
        </>
      ) : (
        <>
          <p className="notice-title">Public key of {endpoint.id} (v1a: receivers verify with it; the private key never leaves the service)</p>
          <p>
            <code className="secret">{endpoint.public_key}</code> <CopyButton value={endpoint.public_key ?? ""} label="Copy public key" />
          </p>
        </>
      )}
    </div>
  );
}
