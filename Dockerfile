# The catalog-streams image: the CLI as the entrypoint, the package installed in /app as any
# project installs it (node_modules/catalog-streams, its pipelines in
# /app/node_modules/catalog-streams/pipelines/), production dependencies only, run as the
# unprivileged `node` user in /data (where relative outputs and the run history go).
#
# Build and try it with scripts/docker-build.sh (docs/deploy.md); the test suite runs the same
# stages without a Docker engine (`scripts/docker-build.sh --local`).
# The AWS SDK (for S3 sinks and states) is an optional peer: build with
# --build-arg WITH_S3=1 to add it.
ARG NODE_VERSION=22

# 1. build: compile with the dev dependencies, then pack the package as it would be published.
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json LICENSE README.md ./
COPY src ./src
COPY pipelines ./pipelines
COPY examples ./examples
COPY docs ./docs
RUN npm run build && mkdir -p /pkg && npm pack --ignore-scripts --pack-destination /pkg

# 2. project: a project that depends on the packed tarball, with a lockfile for `npm ci`.
FROM node:${NODE_VERSION}-bookworm-slim AS project
ARG WITH_S3=0
WORKDIR /app
COPY --from=build /pkg/ ./
COPY scripts/image-project.mjs /tmp/image-project.mjs
RUN node /tmp/image-project.mjs . "$WITH_S3" \
 && npm install --package-lock-only --ignore-scripts --no-audit --no-fund

# 3. runtime: production dependencies only (`npm ci --omit=dev`), no compiler, no sources.
FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=project /app/ ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force \
 && mkdir /data && chown node:node /data
USER node
WORKDIR /data
# The bin itself is PID 1's program, so SIGTERM (a pod stopped, `docker stop`) reaches the CLI,
# which aborts its uploads and leaves the cursor as it was (exit 143).
ENTRYPOINT ["/app/node_modules/.bin/catalog-streams"]
CMD ["--help"]
