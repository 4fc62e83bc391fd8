import { Link, Outlet } from "@tanstack/react-router";
import { describeKey, storedKey } from "../session";
import { SignInPage } from "../pages/SignIn";
import { useAuth } from "./auth";

const NAV = [
  { to: "/", label: "Overview" },
  { to: "/resources", label: "Resources" },
  { to: "/events", label: "Events" },
  { to: "/webhooks", label: "Webhooks" },
  { to: "/jobs", label: "Jobs" },
  { to: "/files", label: "Files" },
  { to: "/request-logs", label: "Request logs" },
] as const;

/** Every page: the header with the key's mode and sign-out, the navigation, and the page; sign-in without a key. */
export function Layout() {
  const auth = useAuth();
  if (!auth.key) return <SignInPage />;
  const { mode, kind } = describeKey(storedKey() ?? auth.key);
  const readOnly = auth.scopes !== null && !auth.scopes.some((s) => s.endsWith(":write"));
  return (
    <div className="shell">
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <header className="topbar">
        <span className="brand">rms dashboard</span>
        <span className={`mode mode-${mode}`}>{mode === "live" ? "Live mode" : "Test mode"}</span>
        <span className="key-kind">
          {kind} key{readOnly ? " · read-only" : ""}
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
        {auth.scopes === null ? (
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
