import type { Schemas } from "@rms/sdk";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { getRouteApi, useNavigate } from "@tanstack/react-router";
import { unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { type Column, DataTable } from "../components/DataTable";
import { PageHeader } from "../components/Disclosure";
import { ErrorNotice } from "../components/ErrorNotice";
import { cursorPager, Pager } from "../components/ListPage";
import { ConfirmButton, Loading, Section, StatusBadge, Time } from "../components/ui";
import { usePageTitle } from "../lib/title";
import { describeKey } from "../session";
import { SCOPES } from "../vocabulary";

type ApiKey = Schemas["ApiKey"];

const route = getRouteApi("/keys");

function scopesText(key: ApiKey): string {
  if (key.kind === "secret") return "every scope";
  if (SCOPES.every((s) => key.scopes.includes(s))) return "every scope";
  if (key.dashboard_session && key.scopes.every((s) => s.endsWith(":read"))) return "read only";
  return key.scopes.join(", ");
}

const COLUMNS: readonly Column<ApiKey>[] = [
  { header: "Key", cell: (k) => <code className="id">{k.id}</code> },
  {
    header: "Kind",
    cell: (k) => (
      <>
        {k.kind}
        {k.dashboard_session && (
          <>
            {" "}
            <span className="badge">dashboard session</span>
          </>
        )}
      </>
    ),
  },
  { header: "Scopes", cell: scopesText, className: "text" },
  {
    header: "Status",
    cell: (k) => <StatusBadge status={k.status === "active" ? "enabled" : k.status === "revoked" ? "disabled" : "canceled"} label={k.status} />,
  },
  { header: "Created", cell: (k) => <Time seconds={k.created} />, className: "when" },
  { header: "Expires", cell: (k) => (k.expires_at === null ? "never" : <Time seconds={k.expires_at} />), className: "when" },
  { header: "Last used", cell: (k) => (k.last_used_at === null ? "not since noted" : <Time seconds={k.last_used_at} />), className: "when" },
];

/**
 * The account's keys and dashboard sessions in this mode (`GET /v1/api_keys`): what each may do, when it ends and
 * when it was last used; a secret key revokes one here (`POST /v1/api_keys/{id}/revoke`). Never a secret: the API
 * shows none. A dashboard session sees the list without the buttons (revoking needs a secret key).
 */
export function KeysPage() {
  usePageTitle("API keys");
  const auth = useAuth();
  const search = route.useSearch();
  const navigate = useNavigate({ from: "/keys" });
  const canRevoke = auth.key !== null && describeKey(auth.key).kind === "secret";
  const cursor = search.after ? { starting_after: search.after } : search.before ? { ending_before: search.before } : {};
  const keys = useQuery({
    queryKey: ["api-keys", cursor],
    placeholderData: keepPreviousData,
    queryFn: () => unwrap(auth.client.apiKeys.list({ limit: 20, ...cursor })),
  });
  const columns: Column<ApiKey>[] = canRevoke
    ? [...COLUMNS, { header: "Revoke", cell: (k) => (k.status === "active" ? <RevokeButton keyId={k.id} /> : "—") }]
    : [...COLUMNS];
  return (
    <div>
      <PageHeader title="API keys and sessions" />
      <p className="help">
        Every key of this account in {auth.key && describeKey(auth.key).mode === "live" ? "live" : "test"} mode, dashboard sessions included (each sign-in link
        makes one). Secrets are never shown again; "last used" is noted to within five minutes.
      </p>
      {!canRevoke && <p className="scope-note">Revoking a key needs a secret key (sk_...): this tab signed in with another kind, so it shows the list only.</p>}
      <Section title="Keys, newest first">
        {keys.isPending && <Loading what="keys" />}
        <ErrorNotice error={keys.error} />
        {keys.data && (
          <>
            <DataTable
              caption="API keys and dashboard sessions"
              columns={columns}
              rows={keys.data.data}
              rowClass={(k) => (k.status === "active" ? undefined : "row-ended")}
            />
            {keys.data.data.length === 0 && <p className="empty">No keys.</p>}
            <Pager buttons={cursorPager(search, keys.data, (c) => void navigate({ search: c }), true)} />
          </>
        )}
      </Section>
    </div>
  );
}

function RevokeButton({ keyId }: { keyId: string }) {
  const { client } = useAuth();
  const queryClient = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => unwrap(client.apiKeys.revoke(keyId)),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ["api-keys"] }),
  });
  return (
    <>
      <ConfirmButton label="Revoke" name={`Revoke ${keyId}`} confirmLabel="Yes, revoke it" busy={revoke.isPending} onConfirm={() => revoke.mutate()} />
      <ErrorNotice error={revoke.error} />
    </>
  );
}
