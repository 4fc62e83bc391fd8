// A retrieve of an id that does not exist: RMSInvalidRequestError with the answer's request id.
import { RMSError, RMSInvalidRequestError } from "@rms/sdk";
import { rms, report } from "./client.mjs";

try {
  await rms.resources.retrieve("res_0000000000000000000000");
  report({ thrown: false });
} catch (error) {
  report({
    thrown: true,
    invalidRequest: error instanceof RMSInvalidRequestError,
    rmsError: error instanceof RMSError,
    name: error.name,
    type: error.type,
    code: error.code,
    statusCode: error.statusCode,
    requestId: error.requestId,
    headerRequestId: error.headers["request-id"],
  });
}
