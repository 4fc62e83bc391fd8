// Test-only, loaded with `node --import` by the packed-data test (releases.e2e.test.ts): moves this process's wall
// clock (`Date`) by RMS_TEST_CLOCK_SHIFT_MS, so a stack started on a packed release database runs as if right after
// the release wrote it, whenever the test runs: what the data keeps for a day or a week (idempotency records,
// uploaded files, a rotated secret's grace, dashboard sessions) is still there. Timers and monotonic clocks are
// untouched.
const shift = Number(process.env.RMS_TEST_CLOCK_SHIFT_MS ?? "0");
if (Number.isFinite(shift) && shift !== 0) {
  const RealDate = globalThis.Date;
  const realNow = RealDate.now;
  class ShiftedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(realNow() + shift);
      else super(...args);
    }
    static now() {
      return realNow() + shift;
    }
  }
  globalThis.Date = ShiftedDate;
}
