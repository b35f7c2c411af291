#!/bin/sh
# Build the lab's container images (images/<name>/Dockerfile, context images/).
#
#   scripts/build-images.sh [--force] [NAME...]   # default: all images in images/tags.sh
#
# Base image, per Debian suite (an image's `ARG BASE_IMAGE=debian:<suite>-slim`):
# $BASE_IMAGE if set (bookworm only); else debian:<suite>-slim when Docker already
# has it; else dnslab/base:<suite>, made by scripts/make-base-image.sh with
# debootstrap. Nothing is ever pulled from a registry.
# An image is skipped when an image with its tag exists whose
# org.dnslab.content-hash label matches the hash of its build inputs
# (Dockerfile, images/common/, images/versions.env, base image id).
# Writes build/images.json ({server kind: image reference}) and prints a summary.
set -eu

REPO=$(cd "$(dirname "$0")/.." && pwd)
IMAGES="$REPO/images"
BUILD="$REPO/build"
LOGDIR="$BUILD/images"

force=0
names=""
for arg in "$@"; do
    case "$arg" in
    --force) force=1 ;;
    -h | --help)
        sed -n '2,12p' "$0"
        exit 0
        ;;
    -*)
        echo "usage: $0 [--force] [NAME...]" >&2
        exit 2
        ;;
    *) names="$names $arg" ;;
    esac
done

"$REPO/scripts/start-dockerd.sh" >/dev/null || exit 1
mkdir -p "$LOGDIR"

# base_for SUITE: prints "<base image reference> <why it was chosen>" for images FROM
# debian:<suite>-slim. BASE_IMAGE overrides the bookworm base only.
base_for() {
    if [ "$1" = bookworm ] && [ -n "${BASE_IMAGE:-}" ]; then
        docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 || {
            echo "error: BASE_IMAGE=$BASE_IMAGE is not in the local Docker image store" >&2
            return 1
        }
        echo "$BASE_IMAGE from BASE_IMAGE"
    elif docker image inspect "debian:$1-slim" >/dev/null 2>&1; then
        echo "debian:$1-slim present locally"
    else
        "$REPO/scripts/make-base-image.sh" "$1" >&2 || return 1
        echo "dnslab/base:$1 debian:$1-slim not available; local debootstrap base"
    fi
}

# The Debian suite an image builds on: from its Dockerfile's `ARG BASE_IMAGE=debian:<suite>-slim`.
suite_of() {
    sed -n 's/^ARG BASE_IMAGE=debian:\([a-z]*\)-slim$/\1/p' "$IMAGES/$1/Dockerfile" | head -n 1
}

# Build args: every pinned version.
build_args=""
while IFS= read -r line; do
    case "$line" in
    [A-Z]*=*) build_args="$build_args --build-arg $line" ;;
    esac
done <"$IMAGES/versions.env"

tab=$(mktemp)
trap 'rm -f "$tab"' EXIT
"$IMAGES/tags.sh" >"$tab"
if [ -z "$names" ]; then
    names=$(awk '{ print $2 }' "$tab")
fi

summary=""
bases=""
failed=0
for name in $names; do
    ref=$(awk -v n="$name" '$2 == n { print $5 }' "$tab")
    if [ -z "$ref" ] || [ ! -f "$IMAGES/$name/Dockerfile" ]; then
        echo "error: unknown image '$name' (known: $(awk '{ printf "%s ", $2 }' "$tab"))" >&2
        exit 2
    fi
    suite=$(suite_of "$name")
    [ -n "$suite" ] || {
        echo "error: images/$name/Dockerfile lacks 'ARG BASE_IMAGE=debian:<suite>-slim'" >&2
        exit 2
    }
    line=$(base_for "$suite") || exit 1
    base=${line%% *}
    base_id=$(docker image inspect --format '{{.Id}}' "$base")
    bases="$bases$suite: $base (${line#* }, $(echo "$base_id" | cut -c8-19))
"
    hash=$(
        {
            cat "$IMAGES/$name/Dockerfile" "$IMAGES/versions.env"
            find "$IMAGES/common" -type f | LC_ALL=C sort | xargs cat
            echo "$base_id"
        } | sha256sum | cut -c1-16
    )
    have=$(docker image inspect --format '{{index .Config.Labels "org.dnslab.content-hash"}}' "$ref" 2>/dev/null || true)
    start=$(date +%s)
    if [ "$force" = 0 ] && [ "$have" = "$hash" ]; then
        status="up to date"
    else
        echo "building $ref (log: $LOGDIR/$name.log)"
        # --network host: apt inside the build uses the host's network setup.
        # shellcheck disable=SC2086
        if docker build --force-rm --network host -f "$IMAGES/$name/Dockerfile" -t "$ref" \
            --build-arg BASE_IMAGE="$base" $build_args \
            --label org.dnslab.content-hash="$hash" \
            "$IMAGES" >"$LOGDIR/$name.log" 2>&1; then
            status="built"
        else
            echo "error: building $ref failed; last lines of $LOGDIR/$name.log:" >&2
            tail -n 25 "$LOGDIR/$name.log" >&2
            status="FAILED"
            failed=1
        fi
    fi
    secs=$(($(date +%s) - start))
    size=$(docker image inspect --format '{{.Size}}' "$ref" 2>/dev/null || echo 0)
    summary="$summary$name ${ref#*:} $((size / 1000000)) $secs $status
"
done

# images.json lists every kind whose image exists now.
{
    sep="{"
    while read -r kind _dir _pkg _ver ref; do
        if docker image inspect "$ref" >/dev/null 2>&1; then
            printf '%s\n  "%s": "%s"' "$sep" "$kind" "$ref"
            sep=","
        fi
    done <"$tab"
    [ "$sep" = "{" ] && printf '{'
    printf '\n}\n'
} >"$BUILD/images.json.tmp"
mv "$BUILD/images.json.tmp" "$BUILD/images.json"

echo
printf '%-22s %-20s %8s %9s  %s\n' IMAGE TAG "SIZE(MB)" "BUILD(s)" STATUS
printf '%s' "$summary" | while read -r name tag size secs status; do
    printf '%-22s %-20s %8s %9s  %s\n' "dnslab/$name" "$tag" "$size" "$secs" "$status"
done
printf '%s' "$bases" | sort -u | sed 's/^/base image for /'
echo "image map: $BUILD/images.json"
exit "$failed"
