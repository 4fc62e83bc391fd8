import { useState, type FormEvent } from "react";
import { useAuth } from "../app/auth";
import { usePageTitle } from "../lib/title";
import { looksLikeKey } from "../session";

/** Sign-in: paste a key, or open a link from `rms dashboard` / `POST /v1/dashboard_sessions`. */
export function SignInPage() {
  const auth = useAuth();
  const [key, setKey] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  usePageTitle("Sign in");

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!looksLikeKey(key)) {
      setProblem("That does not look like an API key: it starts with sk_, rk_ or pk_, then live_ or test_.");
      return;
    }
    setProblem(null);
    setBusy(true);
    try {
      await auth.signIn(key.trim());
    } catch {
      // The reason is shown from auth.reason.
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" className="signin" tabIndex={-1}>
      <h1>Sign in to the rms dashboard</h1>
      {auth.reason && (
        <div className="notice notice-error" role="alert">
          <p className="notice-title">You were signed out</p>
          <p>{auth.reason.message}</p>
          {auth.reason.requestId && (
            <p className="notice-meta">
              request id <code data-testid="request-id">{auth.reason.requestId}</code>
            </p>
          )}
        </div>
      )}
      <p>
        Open a sign-in link (<code>npx rms dashboard --account acct_... --mode test</code>, the link <code>npm start</code> prints, or{" "}
        <code>POST /v1/dashboard_sessions</code>), or paste an API key. The key stays in this tab only and is forgotten when you sign out or close it.
      </p>
      <form onSubmit={(e) => void submit(e)} className="form">
        <label htmlFor="signin-key">API key</label>
        <input
          id="signin-key"
          name="key"
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={key}
          onChange={(e) => setKey(e.target.value)}
          aria-describedby={problem ? "signin-problem" : undefined}
          aria-invalid={problem ? true : undefined}
          required
        />
        {problem && (
          <p id="signin-problem" className="field-error">
            {problem}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
