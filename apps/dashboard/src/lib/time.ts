/**
 * Times as the pages show them: local time, written `YYYY-MM-DD HH:MM:SS` (the date and the clock each keep their
 * shape), with the UTC time for the hover title (the API's times are Unix seconds, UTC).
 */

const pad = (n: number) => String(n).padStart(2, "0");

/** The local date and clock of Unix seconds, or null for none. */
export function localParts(seconds: number | null | undefined): { date: string; clock: string } | null {
  if (seconds === null || seconds === undefined) return null;
  const d = new Date(seconds * 1000);
  return {
    date: `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`,
    clock: `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`,
  };
}

/** Unix seconds as local `YYYY-MM-DD HH:MM:SS`; "—" for none. */
export function formatTime(seconds: number | null | undefined): string {
  const parts = localParts(seconds);
  return parts ? `${parts.date} ${parts.clock}` : "—";
}

/** Unix seconds as `YYYY-MM-DD HH:MM:SS UTC`; "—" for none. */
export function formatUtc(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return "—";
  return new Date(seconds * 1000)
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d{3}Z$/, " UTC");
}

/** How far from `nowMs` a time is, in words: "in 4 min", "12 s ago", "3 h ago". */
export function relativeTime(seconds: number, nowMs: number = Date.now()): string {
  const delta = Math.round(seconds - nowMs / 1000);
  const abs = Math.abs(delta);
  const [n, unit] =
    abs < 90 ? [abs, "s"] : abs < 5_400 ? [Math.round(abs / 60), "min"] : abs < 172_800 ? [Math.round(abs / 3600), "h"] : [Math.round(abs / 86_400), "d"];
  return delta >= 0 ? `in ${n} ${unit}` : `${n} ${unit} ago`;
}
