import type { Operation } from "../../engine/operation.js";
import { createDashboardSession } from "./create.js";
import { revokeDashboardSession } from "./revoke.js";

export const DASHBOARD_SESSION_OPERATIONS: readonly Operation[] = [createDashboardSession, revokeDashboardSession];
