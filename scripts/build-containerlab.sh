#!/bin/sh
# Build containerlab (the version pinned in tools/containerlab/go.mod) from the
# Go module proxy into build/bin/containerlab. Skipped when that binary already
# reports the pinned version and was built from the current tools/containerlab
# sources (--force rebuilds).
set -eu

REPO=$(cd "$(dirname "$0")/.." && pwd)
SRC="$REPO/tools/containerlab"
OUT="$REPO/build/bin/containerlab"
STAMP="$OUT.stamp"

if ! command -v go >/dev/null 2>&1; then
    echo "error: Go is not installed (needed to build containerlab; apt-get install golang or see go.dev/doc/install)" >&2
    exit 1
fi

version=$(awk '$1 == "require" && $2 == "github.com/srl-labs/containerlab" { print $3 }' "$SRC/go.mod")
[ -n "$version" ] || { echo "error: no containerlab requirement in $SRC/go.mod" >&2; exit 1; }
stamp="$version $(cat "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go" | sha256sum | cut -c1-16) $(go env GOVERSION)"

if [ "${1:-}" != --force ] && [ -x "$OUT" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$stamp" ]; then
    echo "containerlab $version already built: $OUT"
    exit 0
fi

echo "building containerlab $version from the Go module proxy (a few minutes on 2 cores)"
start=$(date +%s)
mkdir -p "$(dirname "$OUT")"
cd "$SRC"
# -mod=mod: resolve from go.mod/go.sum via the module proxy, no vendor tree.
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/srl-labs/containerlab/cmd/version.Version=${version#v}" \
    -o "$OUT.tmp" .
mv "$OUT.tmp" "$OUT"
echo "$stamp" >"$STAMP"
echo "built $OUT ($(($(stat -c %s "$OUT") / 1000000)) MB) in $(($(date +%s) - start)) s"
