import { type AnyRoute, Link, Outlet, useRouter } from "@tanstack/react-router";
import { useAuth } from "../app/auth";
import { JumpBox } from "../components/JumpBox";
import { describeKey, storedKey } from "../session";
import { focusMain } from "./focus";

/** The navigation's links: the router's top-level routes that name themselves (`staticData.nav`), in the router's order. */
function useNavItems(): { to: string; label: string }[] {
  const router = useRouter();
  const children = (router.routeTree.children ?? []) as readonly AnyRoute[];
  return children.flatMap((route) => (route.options.staticData?.nav ? [{ to: route.fullPath as string, label: route.options.staticData.nav }] : []));
}

/** Every signed-in page's frame: the header with the key's mode and sign-out, the navigation, and the page. */
export function Layout() {
  const auth = useAuth();
  const nav = useNavItems();
  const { mode, kind } = describeKey(storedKey() ?? auth.key ?? "");
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
          {nav.map((item) => (
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
