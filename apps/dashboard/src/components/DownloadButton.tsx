import { useState } from "react";
import { useAuth } from "../app/auth";
import { downloadFile } from "../lib/download";
import { ErrorNotice } from "./ErrorNotice";
import { useScopeReason } from "./ui";

/** Downloads a file under the name the API gives it; `label` says what it holds ("Download the export (CSV)"). */
export function DownloadButton({ fileId, label, name }: { fileId: string; label: string; name?: string }) {
  const auth = useAuth();
  const reason = useScopeReason("files:read");
  const [error, setError] = useState<unknown>(null);
  return (
    <>
      <button
        type="button"
        className="secondary small"
        disabled={!!reason}
        aria-label={name}
        title={reason ?? undefined}
        onClick={() => void downloadFile(auth.client, fileId, fileId).then(() => setError(null), setError)}
      >
        {label}
      </button>
      <ErrorNotice error={error} />
    </>
  );
}
