#!/usr/bin/env bash
# `npm run fuzz`: schemathesis against the whole stack, driven by GET /v1/openapi.json.
# Starts `rms start` on free ports with a throwaway data dir, takes the test key the
# first start prints, runs a bounded schemathesis pass, prints its counts, stops the stack.
# Tunables: FUZZ_MAX_EXAMPLES (default 30 per operation), FUZZ_MAX_TIME (seconds, default 180), FUZZ_SEED (default 1),
# FUZZ_PORTS (four ports for HTTPS, core, and the gateway's and core's metrics; default: free ones).
# The hooks (scripts/fuzz_hooks.py) and what each rule is for: docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export PATH="$root/node_modules/.bin:$PATH"

sh scripts/bootstrap.sh
if [ ! -x .venv/bin/schemathesis ]; then
  echo "fuzz: installing schemathesis into .venv/" >&2
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check schemathesis
fi
turbo run build --env-mode=loose --output-logs=errors-only >&2

work=$(mktemp -d "${TMPDIR:-/tmp}/rms-fuzz-XXXXXX")
log="$work/stack.log"
stack_pid=""
fuzz_pid=""
cleanup() {
  if [ -n "$fuzz_pid" ]; then kill -TERM "$fuzz_pid" 2>/dev/null || true; fi
  if [ -n "$stack_pid" ] && kill -0 "$stack_pid" 2>/dev/null; then
    kill -TERM "$stack_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$stack_pid" 2>/dev/null || break; sleep 0.2; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_ports() { node -e '
  const net = require("node:net");
  const n = Number(process.argv[1]); const servers = [];
  (async () => { for (let i = 0; i < n; i++) { const s = net.createServer(); await new Promise((r) => s.listen(0, "127.0.0.1", r)); servers.push(s); }
    console.log(servers.map((s) => s.address().port).join(" ")); servers.forEach((s) => s.close()); })();' "$1"; }
read -r https_port core_port metrics_port core_metrics_port < <(if [ -n "${FUZZ_PORTS:-}" ]; then echo "$FUZZ_PORTS"; else free_ports 4; fi)

echo "fuzz: starting the stack (data in a temporary directory, HTTPS on $https_port)" >&2
env -u MONGODB_URI RMS_DATA_DIR="$work/data" RMS_ADMIN_TOKEN="" PORT="$https_port" HTTP_PORT=0 CORE_ADDR="127.0.0.1:$core_port" \
  METRICS_PORT="$metrics_port" CORE_METRICS_PORT="$core_metrics_port" WORKER_METRICS_PORT=0 RATE_LIMIT_TEST=100000 RATE_LIMIT_LIVE=100000 RATE_LIMIT_ADDRESS=100000 LOG_LEVEL=warn \
  node apps/cli/dist/rms.js start >"$log" 2>&1 &
stack_pid=$!
for _ in $(seq 1 600); do
  grep -q "rms: ready" "$log" && break
  kill -0 "$stack_pid" 2>/dev/null || { cat "$log" >&2; echo "fuzz: the stack did not start" >&2; exit 1; }
  sleep 0.5
done
grep -q "rms: ready" "$log" || { cat "$log" >&2; echo "fuzz: the stack was not ready in time" >&2; exit 1; }
key=$(grep -oE 'sk_test_[0-9A-Za-z]+' "$log" | head -n 1)
[ -n "$key" ] || { echo "fuzz: no test key in the first-start output" >&2; exit 1; }

echo "fuzz: running schemathesis" >&2
set +e
RMS_FUZZ_KEY="$key" RMS_FUZZ_BASE="https://localhost:$https_port" RMS_FUZZ_CA="$work/data/tls/cert.pem" PYTHONPATH="$root/scripts" SCHEMATHESIS_HOOKS=fuzz_hooks \
  .venv/bin/schemathesis --config-file scripts/schemathesis.toml run "https://localhost:$https_port/v1/openapi.json" \
  --tls-verify "$work/data/tls/cert.pem" \
  --checks all \
  --max-examples "${FUZZ_MAX_EXAMPLES:-30}" \
  --max-time "${FUZZ_MAX_TIME:-180}" \
  --workers 2 \
  --seed "${FUZZ_SEED:-1}" \
  --no-color \
  --report junit --report-junit-path "$work/junit.xml" \
  --output-truncate false &
# In the background with `wait`, so a SIGTERM (npm forwards it to us) runs the trap at once.
fuzz_pid=$!
wait "$fuzz_pid"
status=$?
fuzz_pid=""
set -e

python3 - "$work/junit.xml" <<'EOF'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception as error:  # no report: schemathesis failed before testing
    print(f"fuzz: no report ({error})"); sys.exit(0)
cases = root.iter("testcase")
total = failed = errored = skipped = 0
for case in cases:
    total += 1
    if case.find("failure") is not None: failed += 1
    elif case.find("error") is not None: errored += 1
    elif case.find("skipped") is not None: skipped += 1
print(f"fuzz: {total} operations tested: {total - failed - errored - skipped} passed, {failed} failed, {errored} errored, {skipped} skipped")
EOF
if grep -qiE '"level":(50|60)' "$log"; then
  echo "fuzz: the stack logged errors:" >&2
  grep -E '"level":(50|60)' "$log" | head -n 20 >&2
fi
exit "$status"
