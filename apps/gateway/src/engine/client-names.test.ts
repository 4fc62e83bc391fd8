import { describe, expect, it } from "vitest";
import { OPERATIONS } from "../routes/index.js";
import { clientNameOf } from "./client-names.js";
import { openApiDocument } from "../openapi.js";

describe("client names (SDK namespace and method, OpenAPI operationId)", () => {
  it("follow Stripe's method names and read as verb phrases", () => {
    const named = (method: string, path: string, list = false, override?: string) => clientNameOf(method, path, list, override);
    expect(named("GET", "/v1/resources", true)).toEqual({ namespace: "resources", method: "list", operationId: "listResources" });
    expect(named("POST", "/v1/resources")).toEqual({ namespace: "resources", method: "create", operationId: "createResource" });
    expect(named("GET", "/v1/resources/search")).toEqual({ namespace: "resources", method: "search", operationId: "searchResources" });
    expect(named("DELETE", "/v1/resources/:id")).toEqual({ namespace: "resources", method: "del", operationId: "deleteResource" });
    expect(named("POST", "/v1/webhook_endpoints/:id/rotate_secret")).toEqual({
      namespace: "webhookEndpoints",
      method: "rotateSecret",
      operationId: "rotateWebhookEndpointSecret",
    });
    expect(named("GET", "/v1/webhook_endpoints/:id/attempts", true)).toMatchObject({ method: "listAttempts", operationId: "listWebhookEndpointAttempts" });
    expect(named("GET", "/v1/files/:id/contents")).toMatchObject({ method: "contents", operationId: "retrieveFileContents" });
    expect(named("POST", "/v1/uploads/:id/parts", false, "addPart")).toMatchObject({ method: "addPart", operationId: "addUploadPart" });
    // A route added later is named by the same rules, with no line of its own.
    expect(named("POST", "/v1/dashboard_sessions/:id/revoke")).toEqual({
      namespace: "dashboardSessions",
      method: "revoke",
      operationId: "revokeDashboardSession",
    });
    expect(named("GET", "/v1/events/stream")).toMatchObject({ namespace: "events", method: "stream", operationId: "streamEvents" });
    expect(() => named("PUT", "/v1/resources/:id")).toThrow(/clientMethod/);
  });

  it("are unique across the API document, and every authenticated operation has one", () => {
    const document = openApiDocument(OPERATIONS);
    const operations = Object.values(document.paths).flatMap((methods) => Object.values(methods));
    const ids = operations.map((operation) => operation["operationId"]);
    expect(new Set(ids).size).toBe(ids.length);
    const sdk = operations.flatMap((operation) => (operation["x-rms-sdk"] ? [JSON.stringify(operation["x-rms-sdk"])] : []));
    expect(new Set(sdk).size).toBe(sdk.length);
    expect(sdk.length).toBe(OPERATIONS.length + 1); // and GET /v1/status
    for (const id of ids) expect(id).toMatch(/^[a-z][A-Za-z]+$/);
  });
});
