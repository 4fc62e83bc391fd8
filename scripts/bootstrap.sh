#!/bin/sh
# Installs the project's dependencies (Node 24 included, as the `node` devDependency)
# when they are missing or older than the lockfile, so `npm start` and `npm test`
# work on a fresh clone with nothing but the machine's npm.
set -e
cd "$(dirname "$0")/.."
stamp=node_modules/.package-lock.json
if [ ! -x node_modules/.bin/node ] || [ ! -f "$stamp" ] || { [ -f package-lock.json ] && [ package-lock.json -nt "$stamp" ]; }; then
  echo "rms: installing dependencies (first run)" >&2
  # `npm install` rather than `npm ci`: npm 11 writes only this platform's optional
  # binaries (turbo, buf) into the lockfile and `npm ci` then refuses it as out of sync.
  # The lockfile still pins every version.
  npm install --no-audit --no-fund --loglevel=error
fi
