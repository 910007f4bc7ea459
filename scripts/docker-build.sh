#!/usr/bin/env bash
# Builds the image of the Dockerfile and runs it as a scheduler would: `--version`, then the
# shipped demo pipeline against the embedded sandbox (a small catalog), as the image's user.
#
#   scripts/docker-build.sh [--tag <name>]       with a Docker engine: docker build + docker run
#   scripts/docker-build.sh --local [--skip-build]
#       without one (CI, this repository's test suite): the Dockerfile's stages in a temp folder,
#       step for step: build and pack, the project on the tarball (its lockfile), `npm ci
#       --omit=dev` into a fresh folder, then the ENTRYPOINT read from the Dockerfile, run from an
#       empty data folder with a clean environment, as uid 1000 when run as root (the image's
#       `node` user). It uses this checkout's node_modules for the build stage (the image runs
#       `npm ci` first) and npm's cache where it can; --skip-build packs the dist/ already built.
# Without --local, it falls back to the local stages when `docker info` finds no engine, and says so.
# WITH_S3=1 adds the AWS SDK to the image (--build-arg WITH_S3=1).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
TAG=catalog-streams:local
MODE=auto
BUILD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --local) MODE=local ;;
    --skip-build) BUILD=0 ;;
    --tag) TAG="$2"; shift ;;
    *) echo "usage: scripts/docker-build.sh [--tag <name>] | --local [--skip-build]" >&2; exit 2 ;;
  esac
  shift
done
WITH_S3="${WITH_S3:-0}"

# The image's entrypoint and where it installs the package: read from the Dockerfile, so the two never differ.
ENTRYPOINT="$(sed -n 's/^ENTRYPOINT \["\([^"]*\)"\]$/\1/p' Dockerfile)"
[ -n "$ENTRYPOINT" ] || { echo "docker-build: no ENTRYPOINT [\"...\"] line in the Dockerfile" >&2; exit 2; }
# The run a scheduler would make: a shipped pipeline with the embedded sandbox (no network, no secrets).
RUN_ARGS=(run /app/node_modules/catalog-streams/pipelines/demo.yml --sandbox --sandbox-products 200 --sandbox-rate-limit 0)

if [ "$MODE" = auto ]; then
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then MODE=docker; else
    echo "docker-build: no Docker engine here (docker info failed): running the Dockerfile's stages locally (--local)"
    MODE=local
  fi
fi

if [ "$MODE" = docker ]; then
  echo "== docker build -t $TAG"
  docker build --build-arg "WITH_S3=$WITH_S3" -t "$TAG" .
  echo "== docker run $TAG --version"
  docker run --rm "$TAG" --version
  echo "== docker run $TAG ${RUN_ARGS[*]}"
  docker run --rm "$TAG" "${RUN_ARGS[@]}"
  echo "docker-build: ok (image $TAG)"
  exit 0
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/catalog-streams-image-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"
mkdir -p "$WORK/pkg" "$WORK/project" "$WORK/app" "$WORK/data"

echo "== 1. build: compile, npm pack"
[ "$BUILD" = 1 ] && npm run build
npm pack --ignore-scripts --pack-destination "$WORK/pkg" >/dev/null

echo "== 2. project: depends on the tarball; its lockfile"
cp "$WORK"/pkg/catalog-streams-*.tgz "$WORK/project/"
node "$REPO/scripts/image-project.mjs" "$WORK/project" "$WITH_S3"
(cd "$WORK/project" && npm install --package-lock-only --ignore-scripts --no-audit --no-fund --prefer-offline)

echo "== 3. runtime: npm ci --omit=dev into a fresh /app"
cp -R "$WORK/project/." "$WORK/app/"
(cd "$WORK/app" && NODE_ENV=production npm ci --omit=dev --ignore-scripts --no-audit --no-fund --prefer-offline)

# /app of the image is $WORK/app here.
entry="$WORK${ENTRYPOINT}"
args=("${RUN_ARGS[@]/#\/app\//$WORK/app/}")
as_user=()
if [ "$(id -u)" = 0 ]; then
  # The image's `node` user is uid 1000: it may write in /data only.
  chown 1000:1000 "$WORK/data"
  as_user=(setpriv --reuid=1000 --regid=1000 --clear-groups)
fi
run_entry() {
  (cd "$WORK/data" && env -i PATH="$(dirname "$(command -v node)"):/usr/bin:/bin" HOME="$WORK/data" NODE_ENV=production \
    "${as_user[@]}" "$entry" "$@")
}
echo "== 4. run: ${ENTRYPOINT} --version (in /data)"
run_entry --version
echo "== 4. run: ${ENTRYPOINT} ${RUN_ARGS[*]} (in /data)"
run_entry "${args[@]}"
echo "== the data folder after the run:"
(cd "$WORK/data" && find . -type f | sort)
echo "docker-build: ok (the Dockerfile's stages, run locally)"
