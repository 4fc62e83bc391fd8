export type { RateLimiter, RateLimitDecision } from "./interface.js";
export { MemoryRateLimiter } from "./memory.js";
export { MongoRateLimiter, RATE_LIMIT_COLLECTION } from "./mongo.js";
export { enforceRateLimit, rateLimitHeaders, RATE_LIMIT_HEADER, RATE_LIMIT_POLICY_HEADER, type RateLimits } from "./enforce.js";
export { AddressRateLimit } from "./address.js";
