import { createRootRoute, createRoute, createRouter, parseSearchWith, stringifySearchWith } from "@tanstack/react-router";
import { parseFilters } from "./lib/filters";
import { EventDetailPage } from "./pages/EventDetail";
import { EventsPage } from "./pages/Events";
import { FileDetailPage } from "./pages/FileDetail";
import { FilesPage } from "./pages/Files";
import { JobDetailPage } from "./pages/JobDetail";
import { JobsPage } from "./pages/Jobs";
import { KeysPage } from "./pages/Keys";
import { NotFoundPage } from "./pages/NotFound";
import { OverviewPage } from "./pages/Overview";
import { RequestLogDetailPage } from "./pages/RequestLogDetail";
import { RequestLogsPage } from "./pages/RequestLogs";
import { ResourceDetailPage } from "./pages/ResourceDetail";
import { ResourcesPage } from "./pages/Resources";
import { WebhookDetailPage } from "./pages/WebhookDetail";
import { WebhooksPage } from "./pages/Webhooks";
import { Root } from "./shell/Root";

/** Only the string search params a page knows (links can be shared; anything else in the URL is dropped). */
function strings<K extends string>(keys: readonly K[]) {
  return (search: Record<string, unknown>): Partial<Record<K, string>> => {
    const out: Partial<Record<K, string>> = {};
    for (const key of keys) {
      const value = search[key];
      if ((typeof value === "string" && value.trim() !== "") || typeof value === "number") out[key] = String(value).trim();
    }
    return out;
  };
}

const rootRoute = createRootRoute({ component: Root, notFoundComponent: NotFoundPage });

const overview = createRoute({ staticData: { nav: "Overview" }, getParentRoute: () => rootRoute, path: "/", component: OverviewPage });
const resources = createRoute({
  staticData: { nav: "Resources" },
  getParentRoute: () => rootRoute,
  path: "/resources",
  validateSearch: parseFilters,
  component: ResourcesPage,
});
const resource = createRoute({ getParentRoute: () => rootRoute, path: "/resources/$id", component: ResourceDetailPage });
const events = createRoute({
  staticData: { nav: "Events" },
  getParentRoute: () => rootRoute,
  path: "/events",
  validateSearch: strings(["type", "object", "after", "before"] as const),
  component: EventsPage,
});
const event = createRoute({ getParentRoute: () => rootRoute, path: "/events/$id", component: EventDetailPage });
const webhooks = createRoute({ staticData: { nav: "Webhooks" }, getParentRoute: () => rootRoute, path: "/webhooks", component: WebhooksPage });
const webhook = createRoute({
  getParentRoute: () => rootRoute,
  path: "/webhooks/$id",
  validateSearch: strings(["status", "event", "from", "to", "after", "before"] as const),
  component: WebhookDetailPage,
});
const jobs = createRoute({
  staticData: { nav: "Jobs" },
  getParentRoute: () => rootRoute,
  path: "/jobs",
  validateSearch: strings(["status", "type", "after", "before"] as const),
  component: JobsPage,
});
const job = createRoute({ getParentRoute: () => rootRoute, path: "/jobs/$id", component: JobDetailPage });
const files = createRoute({
  staticData: { nav: "Files" },
  getParentRoute: () => rootRoute,
  path: "/files",
  validateSearch: strings(["purpose", "after"] as const),
  component: FilesPage,
});
const file = createRoute({ getParentRoute: () => rootRoute, path: "/files/$id", component: FileDetailPage });
const requestLogs = createRoute({
  staticData: { nav: "Request logs" },
  getParentRoute: () => rootRoute,
  path: "/request-logs",
  validateSearch: strings(["status", "method", "path", "error_code", "api_key", "idempotency_key", "from", "to", "source", "live", "after", "before"] as const),
  component: RequestLogsPage,
});
const keys = createRoute({
  staticData: { nav: "API keys" },
  getParentRoute: () => rootRoute,
  path: "/keys",
  validateSearch: strings(["after", "before"] as const),
  component: KeysPage,
});
const requestLog = createRoute({ getParentRoute: () => rootRoute, path: "/request-logs/$id", component: RequestLogDetailPage });

const routeTree = rootRoute.addChildren([
  overview,
  resources,
  resource,
  events,
  event,
  webhooks,
  webhook,
  jobs,
  job,
  files,
  file,
  requestLogs,
  requestLog,
  keys,
]);

/** Search params as plain text both ways (`?status=404`, never `?status=%22404%22`): every one the pages use is a string. */
const asText = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

export const router = createRouter({
  routeTree,
  basepath: "/dashboard",
  defaultPreload: false,
  scrollRestoration: true,
  parseSearch: parseSearchWith((text) => text),
  stringifySearch: stringifySearchWith(asText),
});

declare module "@tanstack/react-router" {
  interface Register {
    router: typeof router;
  }
  interface StaticDataRouteOption {
    /** The route's link in the navigation, in these words; a route without one is not listed there. */
    nav?: string;
  }
}
