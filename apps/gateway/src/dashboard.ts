import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import express, { type ErrorRequestHandler, type RequestHandler, type Response, type Router } from "express";

/** Where the dashboard is served (CONTRACT.md section 13). */
export const DASHBOARD_PATH = "/dashboard";

/**
 * The headers of every dashboard answer: nothing but this origin may be loaded or run (no inline script or
 * style either), no page may frame it, and no URL leaves in a Referer.
 */
export const DASHBOARD_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'",
  "Referrer-Policy": "no-referrer",
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Cross-Origin-Opener-Policy": "same-origin",
};

/** Hashed build output (`assets/<name>-<hash>.js`) never changes under its name: cached for a year. */
const IMMUTABLE = "public, max-age=31536000, immutable";
/** `index.html` names the current assets: always revalidated, so a new build is picked up at once. */
const REVALIDATE = "no-cache";

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Dashboard not built</title></head>
<body><main><h1>The dashboard is not built</h1>
<p>This gateway serves the dashboard from the files of <code>apps/dashboard/dist</code>, which do not exist.
Run <code>npm run build</code> (or <code>npm start</code>, which builds first) and reload this page.</p></main></body></html>
`;

function secure(res: Response): void {
  for (const [name, value] of Object.entries(DASHBOARD_SECURITY_HEADERS)) res.setHeader(name, value);
}

/**
 * The dashboard's static files under `/dashboard/`, from `dir` (the build output of apps/dashboard). A path that
 * names no file (a deep link such as `/dashboard/resources/res_...`) answers `index.html`, whose router shows that
 * page; a missing asset under `assets/` is a plain 404. Without a build the gateway still starts, and every
 * dashboard path answers a 404 page that says how to build it.
 */
export function dashboardRouter(dir: string | null): Router {
  const router = express.Router({ caseSensitive: true, strict: true });
  const indexFile = dir === null ? null : join(dir, "index.html");
  const built = indexFile !== null && existsSync(indexFile);
  router.use((req, res, next) => {
    // The API's JSON content type and `no-store` (set for every answer first) are not this file's: each answer
    // below sets its own, and a script served as JSON would not run under `nosniff`.
    res.removeHeader("Content-Type");
    res.removeHeader("Cache-Control");
    secure(res);
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("Allow", "GET, HEAD");
      res.status(405).type("text/plain").send("Method not allowed.\n");
      return;
    }
    next();
  });
  router.get("/", (req, res, next) => {
    // `/dashboard` without its slash: the app's relative asset paths need it.
    if (req.originalUrl.split("?")[0] === DASHBOARD_PATH) {
      res.redirect(301, `${DASHBOARD_PATH}/`);
      return;
    }
    next();
  });
  if (!built || dir === null) {
    router.use((_req, res) => {
      res.status(404).setHeader("Cache-Control", "no-store");
      res.type("html").send(NOT_BUILT);
    });
    return router;
  }
  router.use(
    "/assets",
    express.static(join(dir, "assets"), {
      index: false,
      fallthrough: false,
      etag: true,
      setHeaders: (res) => res.setHeader("Cache-Control", IMMUTABLE),
    }),
  );
  router.use(
    express.static(dir, {
      index: false,
      etag: true,
      setHeaders: (res) => res.setHeader("Cache-Control", REVALIDATE),
    }),
  );
  // Read at each request (a few hundred bytes), so a rebuild while the gateway runs is served at once.
  const spa: RequestHandler = (_req, res) => {
    res.status(200).setHeader("Cache-Control", REVALIDATE);
    res.type("html").send(readFileSync(indexFile!));
  };
  router.use(spa);
  const missing: ErrorRequestHandler = (error: { status?: number }, _req, res, _next) => {
    res.status(error.status === 404 ? 404 : 500).setHeader("Cache-Control", "no-store");
    res.type("text/plain").send(error.status === 404 ? "Not found.\n" : "Error.\n");
  };
  router.use(missing);
  return router;
}
