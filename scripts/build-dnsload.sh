#!/bin/sh
# Build the lab's fallback-aware load generator (tools/dnsload) into build/bin/dnsload.
# Usage: scripts/build-dnsload.sh [--test]   (--test also runs the Go unit tests)
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT="${DNSLAB_BUILD:-$REPO/build}/bin"
mkdir -p "$OUT"
cd "$REPO/tools/dnsload"
if [ "${1:-}" = "--test" ]; then
    go test ./...
fi
CGO_ENABLED=0 go build -trimpath -o "$OUT/dnsload" .
echo "built $OUT/dnsload"
