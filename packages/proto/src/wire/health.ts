/**
 * Core's health (grpc.health.v1) names, besides `""` and one per service: `""` is SERVING while the database
 * answers, NOT_SERVING while it does not (the process cannot serve: probes take it out). This one is SERVING only
 * while the database answers quickly (a ping within DATABASE_SLOW_MS), NOT_SERVING while it is slow or down: the
 * service still works, slowly, which `GET /v1/status` reports as `degraded` (200).
 */
export const DATABASE_HEALTH_SERVICE = "rms.database";

/** A database ping slower than this makes core's health `degraded` (DATABASE_HEALTH_SERVICE NOT_SERVING). */
export const DATABASE_SLOW_MS = 1_000;
