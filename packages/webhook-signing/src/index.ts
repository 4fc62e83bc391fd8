// The whole public face of @rms/webhook-signing (docs/webhooks.md, "Signatures"): no storage, no gRPC, Node's crypto only.
export {
  isEndpointSecret,
  newEndpointKeyPair,
  newEndpointSecret,
  PRIVATE_KEY_PREFIX,
  PUBLIC_KEY_PREFIX,
  publicKeyOf,
  SECRET_PREFIX,
  signingKeyOf,
  verifyingKeyOf,
  type EndpointKeyPair,
} from "./keys.js";
export { signatureHeader } from "./signature.js";
export { deliveryHeaders, WEBHOOK_USER_AGENT, type SignedDelivery } from "./delivery.js";
