# syntax=docker/dockerfile:1
# One image for every process of the service; the command chooses which (deploy/image/processes.json):
#   docker run IMAGE gateway | core | worker | rms <args> | probe <check>      (default: gateway)
# Build from the repository root:  docker build -t rms:1.4.1 .      (see deploy/README.md)
# Pin the base by digest for reproducible builds: --build-arg NODE_IMAGE=node:24-slim@sha256:<digest>
ARG NODE_IMAGE=node:24-slim

# Only the package manifests and the lockfile, so the dependency layers are rebuilt only when they change.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN mkdir -p /out \
 && for manifest in package.json apps/*/package.json packages/*/package.json; do \
      mkdir -p "/out/$(dirname "$manifest")" && cp "$manifest" "/out/$manifest"; \
    done \
 && cp package-lock.json /out/

# Every dependency (the build's tools included) exactly as the lockfile pins it, then `turbo run build`.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV TURBO_TELEMETRY_DISABLED=1
COPY --from=manifests /out/ ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npx turbo run build --env-mode=loose \
 && mkdir -p /dist \
 && for package in apps/* packages/*; do \
      if [ -d "$package/dist" ]; then mkdir -p "/dist/$package" && cp -R "$package/dist" "/dist/$package/"; fi; \
    done \
 && find /dist \( -name '*.d.ts' -o -name '*.d.ts.map' \) -delete

# Production dependencies only, without running any package's install scripts.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY --from=manifests /out/ ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE}
LABEL org.opencontainers.image.title="rms" \
      org.opencontainers.image.description="Resource Management Service: gateway, core and worker in one image"
ENV NODE_ENV=production
WORKDIR /app
# Nothing but node runs here: no package managers, and a user of its own (numeric, for runAsNonRoot checks).
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack /opt/yarn-* \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg \
 && groupadd --system --gid 10001 rms \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin rms
COPY --from=deps /app/ ./
COPY --from=build /dist/ ./
COPY deploy/image/ deploy/image/
# Files stay root's and read-only to the service; it writes nothing (run it with a read-only root filesystem).
USER 10001:10001
# HTTPS API (PORT), plain-HTTP rejecting listener (HTTP_PORT), core gRPC (CORE_ADDR). Metrics ports bind 127.0.0.1.
EXPOSE 8443 8080 50051
ENTRYPOINT ["node", "deploy/image/rms-entrypoint.mjs"]
CMD ["gateway"]
