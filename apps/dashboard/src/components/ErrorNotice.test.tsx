import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { ApiFailure, failureOf } from "../api/client";
import { ErrorNotice, NotAvailable } from "./ErrorNotice";

describe("error display", () => {
  it("shows the API's message, code, parameter and request id", () => {
    const failure = failureOf(
      400,
      {
        error: { type: "invalid_request_error", code: "parameter_invalid_empty", message: "name must not be empty.", param: "name", request_id: "req_abc123" },
      },
      "req_header",
    );
    const html = renderToStaticMarkup(<ErrorNotice error={failure} />);
    expect(html).toContain('role="alert"');
    expect(html).toContain("name must not be empty.");
    expect(html).toContain("HTTP 400");
    expect(html).toContain("<code>parameter_invalid_empty</code>");
    expect(html).toContain("<code>name</code>");
    expect(html).toContain('<code data-testid="request-id">req_abc123</code>');
  });

  it("takes the request id from the header when a body has none, and says when no answer came", () => {
    expect(failureOf(502, null, "req_fromheader").requestId).toBe("req_fromheader");
    expect(failureOf(502, null, null).message).toBe("The API answered HTTP 502 without an error message.");
    const offline = new ApiFailure({ status: 0, type: "network_error", code: "network_error", message: "The API could not be reached.", requestId: null });
    expect(renderToStaticMarkup(<ErrorNotice error={offline} />)).toContain("none (no answer)");
  });

  it("escapes what the API says (no HTML from data)", () => {
    const failure = failureOf(400, { error: { code: "x", message: "<img src=x onerror=alert(1)>", request_id: "req_1" } }, null);
    expect(renderToStaticMarkup(<ErrorNotice error={failure} />)).not.toContain("<img");
  });

  it("says a missing route is a feature this server lacks, with the request id", () => {
    const missing = failureOf(
      404,
      { error: { type: "invalid_request_error", code: "route_missing", message: "Unrecognized request URL.", request_id: "req_404" } },
      null,
    );
    expect(missing.routeMissing).toBe(true);
    const html = renderToStaticMarkup(<NotAvailable what="Files" error={missing} />);
    expect(html).toContain("Files are not available on this server");
    expect(html).toContain("req_404");
  });

  it("renders nothing without an error", () => {
    expect(renderToStaticMarkup(<ErrorNotice error={null} />)).toBe("");
  });
});
