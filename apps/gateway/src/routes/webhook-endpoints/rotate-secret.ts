import { SIGNATURE_SCHEMES } from "@rms/proto";
import { optionalEnum, optionalInteger } from "../../parsing/params.js";
import { defineOperation } from "../../engine/operation.js";
import { ENDPOINT_ID_PATH, SIGNATURE_SCHEME_PARAM, WebhookEndpointWithSecretObject } from "./objects.js";

/** Longest grace period of a rotated secret, in seconds (7 days). */
const GRACE_MAX_S = 604_800;

/** POST /v1/webhook_endpoints/:id/rotate_secret: a new secret; the old ones keep signing for `expires_in` seconds. */
export const rotateWebhookEndpointSecret = defineOperation({
  method: "POST",
  path: "/v1/webhook_endpoints/:id/rotate_secret",
  summary: "Roll a webhook endpoint's signing secret or key pair",
  scope: "webhooks:write",
  pathParameters: ENDPOINT_ID_PATH,
  parameters: {
    expires_in: {
      example: 3600,
      schema: {
        type: "integer",
        minimum: 0,
        maximum: GRACE_MAX_S,
        default: 86_400,
        description: "Seconds the previous secret keeps signing (both signatures are sent meanwhile); 0 drops it at once.",
      },
    },
    signature_scheme: {
      ...SIGNATURE_SCHEME_PARAM,
      schema: {
        ...SIGNATURE_SCHEME_PARAM.schema,
        description:
          `${SIGNATURE_SCHEME_PARAM.schema.description} Default: the endpoint's current scheme; another one moves the endpoint to it (the ` +
          `previous key keeps signing in its own scheme during \`expires_in\`).`,
      },
    },
  },
  success: { status: 200, description: "The endpoint with its new signing secret (`v1`) or public key (`v1a`).", object: WebhookEndpointWithSecretObject },
  errors: ["resource_missing", "parameter_invalid", "parameter_invalid_empty"],
  service: "webhookEndpoints",
  rpc: "rotateWebhookEndpointSecret",
  request({ params, path, tenant }) {
    const expiresIn = optionalInteger(params, "expires_in", { min: 0, max: GRACE_MAX_S });
    const signatureScheme = optionalEnum(params, "signature_scheme", SIGNATURE_SCHEMES) ?? "";
    return { tenant, id: path["id"] ?? "", ...(expiresIn !== undefined ? { expiresIn: BigInt(expiresIn) } : {}), signatureScheme };
  },
  reply: ({ webhookEndpoint }) => webhookEndpoint,
});
