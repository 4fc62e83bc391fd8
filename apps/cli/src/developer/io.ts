import type { ReconnectInfo } from "@rms/sdk";

/** What a developer command writes to, and the signal that stops a command that runs until interrupted. */
export interface DeveloperIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Aborted on ^C (SIGINT) or SIGTERM. */
  readonly interrupted?: AbortSignal;
}

/** The line a stream's reconnection prints (on stderr: stdout carries only what the command reports). */
export function reconnectLine(info: ReconnectInfo): string {
  const where = info.lastEventId ? ` after ${info.lastEventId}` : "";
  return `Connection lost (${info.reason.message}); resuming${where} in ${(info.delayMs / 1000).toFixed(1)} s\n`;
}
