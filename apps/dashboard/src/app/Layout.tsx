import { Link, Outlet, useRouter } from "@tanstack/react-router";
import { useEffect, useRef } from "react";
import { describeKey, storedKey } from "../session";
import { SignInPage } from "../pages/SignIn";
import { SwitchAccountPage } from "../pages/SwitchAccount";
import { JumpBox } from "../components/JumpBox";
import { useAuth } from "./auth";

const NAV = [
  { to: "/", label: "Overview" },
  { to: "/resources", label: "Resources" },
  { to: "/events", label: "Events" },
  { to: "/webhooks", label: "Webhooks" },
  { to: "/jobs", label: "Jobs" },
  { to: "/files", label: "Files" },
  { to: "/request-logs", label: "Request logs" },
  { to: "/keys", label: "API keys" },
] as const;

/** Moves the keyboard's focus to the main region. */
function focusMain() {
  document.getElementById("main")?.focus({ preventScroll: true });
}

/** Moves the focus to the main region if the element that had it went away (the browser left it on the document). */
function focusMainIfLost() {
  const active = document.activeElement;
  if (active === null || active === document.body || !active.isConnected) focusMain();
}

/**
 * After a move to another page (or signing in or out), puts the focus on the new page's main region when the
 * element that had it went away with the old page (a link in a table, the sign-in form): otherwise the next Tab
 * starts again at the top of the document. Focus still on the navigation stays there.
 */
function useFocusAfterNavigation(signedIn: boolean) {
  const router = useRouter();
  useEffect(
    () =>
      router.subscribe("onRendered", (event) => {
        if (event.fromLocation && event.pathChanged) focusMainIfLost();
      }),
    [router],
  );
  const first = useRef(true);
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs when the tab signs in or out
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    focusMainIfLost();
  }, [signedIn]);
}

/** Every page: the header with the key's mode and sign-out, the navigation, and the page; sign-in without a key. */
export function Layout() {
  const auth = useAuth();
  useFocusAfterNavigation(auth.key !== null);
  if (!auth.key) return <SignInPage />;
  if (auth.linkKey) return <SwitchAccountPage linkKey={auth.linkKey} />;
  const { mode, kind } = describeKey(storedKey() ?? auth.key);
  const readOnly = auth.scopes !== null && !auth.scopes.some((s) => s.endsWith(":write"));
  return (
    <div className="shell">
      {/* biome-ignore lint/a11y/useValidAnchor: a skip link; its href works without script, the click only keeps #main out of the URL */}
      <a
        href="#main"
        className="skip-link"
        onClick={(e) => {
          // The focus moves; the address bar keeps the page's URL (no #main in a link someone copies).
          e.preventDefault();
          focusMain();
        }}
      >
        Skip to content
      </a>
      <header className="topbar">
        <span className="brand">rms dashboard</span>
        <JumpBox />
        {auth.account && (
          <span className="account" data-testid="account">
            <span className="sr-only">Account </span>
            {auth.account.id}
          </span>
        )}
        <span className={`mode mode-${mode}`}>{mode === "live" ? "Live mode" : "Test mode"}</span>
        <span className="key-kind">
          {kind} key{auth.account?.dashboardSession ? " · dashboard session" : ""}
          {readOnly ? " · read-only" : ""}
        </span>
        <button type="button" className="signout" onClick={() => auth.signOut()}>
          Sign out
        </button>
      </header>
      <nav aria-label="Main" className="nav">
        <ul>
          {NAV.map((item) => (
            <li key={item.to}>
              <Link to={item.to} activeOptions={{ exact: item.to === "/", includeSearch: false }} activeProps={{ "aria-current": "page", className: "active" }}>
                {item.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" className="content" tabIndex={-1}>
        {auth.scopes === null && auth.probeFailure ? (
          <div className="notice notice-error" role="alert">
            <p className="notice-title">Could not check what this key may do</p>
            <p>{auth.probeFailure}</p>
            <button type="button" onClick={() => auth.retryProbe()}>
              Try again
            </button>
          </div>
        ) : auth.scopes === null ? (
          <p className="loading" role="status">
            Checking what this key may do…
          </p>
        ) : (
          <Outlet />
        )}
      </main>
    </div>
  );
}
