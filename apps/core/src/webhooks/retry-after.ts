/**
 * Seconds to wait from a `Retry-After` header (RFC 9110 10.2.3): a whole
 * number of seconds or an HTTP-date. Null when absent or unreadable; a date in
 * the past is 0.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  // Only the date forms RFC 9110 names (IMF-fixdate and the two obsolete ones), never free text Date.parse might guess at.
  if (!/^[A-Za-z]{3,9},? /.test(text)) return null;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}
