import { ApiError } from "../../errors.js";
import { defineLocalOperation } from "../../engine/operation.js";
import { REQUEST_LOG_ID_PATH, RequestLogObject } from "./objects.js";

const REQUEST_ID = /^req_[0-9A-Za-z]{24}$/;

/** GET /v1/request_logs/:id: one request of this account and mode (another's, or one past retention: 404). */
export const retrieveRequestLog = defineLocalOperation({
  method: "GET",
  path: "/v1/request_logs/:id",
  summary: "Retrieve a request log",
  scope: "request_logs:read",
  pathParameters: REQUEST_LOG_ID_PATH,
  success: { status: 200, description: "The request log.", object: RequestLogObject },
  errors: ["resource_missing"],
  read({ path, tenant }) {
    const id = path["id"] ?? "";
    const missing = () => new ApiError("resource_missing", `No such request log: '${id.slice(0, 100)}'`, { param: "id" });
    return async (stores) => {
      if (!REQUEST_ID.test(id)) throw missing();
      const found = await stores.requestLogs.retrieve(tenant.accountId, tenant.livemode, id);
      if (!found) throw missing();
      return found;
    };
  },
  reply: (found) => found,
});
