// Test helpers of @rms/telemetry: production code never imports them.
export { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "./otlp-receiver.js";
export { startTracingToReceiver } from "./tracing.js";
