import { useEffect, useState } from "react";
import { useAuth } from "../app/auth";
import { type AccountOfKey, describeAccount, fetchAccount } from "../lib/account";
import { describeKey } from "../session";

type LinkAccount =
  | { readonly state: "loading" }
  | { readonly state: "known"; readonly account: AccountOfKey | null }
  | { readonly state: "refused"; readonly message: string };

/**
 * A sign-in link opened in a tab already signed in with another key: the link may lead to another account or mode,
 * so the tab asks before it switches, naming both accounts (and the link's, as the API says it: the link's own text
 * is not trusted for it). Staying keeps the tab as it was; the link's key is then forgotten.
 */
export function SwitchAccountPage({ linkKey }: { readonly linkKey: string }) {
  const auth = useAuth();
  const [link, setLink] = useState<LinkAccount>({ state: "loading" });
  useEffect(() => {
    let live = true;
    fetchAccount(linkKey).then(
      (account) => live && setLink({ state: "known", account }),
      (error: Error) => live && setLink({ state: "refused", message: error.message }),
    );
    return () => {
      live = false;
    };
  }, [linkKey]);

  const current = auth.account ? describeAccount(auth.account) : `a ${describeKey(auth.key ?? "").mode} mode key`;
  const target = link.state === "known" ? (link.account ? describeAccount(link.account) : `a ${describeKey(linkKey).mode} mode key`) : null;
  const same =
    link.state === "known" &&
    link.account !== null &&
    auth.account !== null &&
    link.account.id === auth.account.id &&
    link.account.livemode === auth.account.livemode;
  return (
    <main id="main" className="signin" tabIndex={-1}>
      <h1>Switch to the link's sign-in?</h1>
      <p>
        This tab is signed in to <strong data-testid="current-account">{current}</strong>.
      </p>
      {link.state === "loading" && (
        <p className="loading" role="status">
          Checking the link's key…
        </p>
      )}
      {link.state === "refused" && (
        <div className="notice notice-error" role="alert">
          <p className="notice-title">The link's key was refused</p>
          <p>{link.message}</p>
        </div>
      )}
      {target !== null && (
        <p>
          The link signs in to <strong data-testid="link-account">{target}</strong>
          {same ? ", the same account and mode with another key." : "."}
        </p>
      )}
      <div className="actions">
        <button type="button" disabled={link.state !== "known"} onClick={() => auth.answerLink(true)}>
          Switch to the link's key
        </button>
        <button type="button" className="secondary" onClick={() => auth.answerLink(false)}>
          Stay signed in as before
        </button>
      </div>
    </main>
  );
}
