// The CommonJS build, as `require` finds it.
const { RMS, RMSInvalidRequestError, Webhooks } = require("@rms/sdk");

const rms = new RMS("sk_test_unused");
console.log(JSON.stringify({ version: RMS.VERSION, namespaces: Object.keys(rms), errors: typeof RMSInvalidRequestError, verify: typeof Webhooks.verify }));
