// The chaos run's clock: its progress lines on stderr carry the seconds since the run began.
/** When the run began (ms since the epoch). */
export const startedAt = Date.now();

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Seconds since the run began. */
export const elapsedSeconds = () => (Date.now() - startedAt) / 1000;

export const log = (line: string) => process.stderr.write(`chaos ${elapsedSeconds().toFixed(1)}s: ${line}\n`);
