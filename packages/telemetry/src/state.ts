/**
 * Whether this process records spans (startTracing registered a provider). Adapters ask it first, so that with
 * tracing off a request pays one boolean read, not a no-op span and a context switch.
 */
let on = false;

export function tracingOn(): boolean {
  return on;
}

export function setTracingOn(value: boolean): void {
  on = value;
}
