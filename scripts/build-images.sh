#!/bin/sh
# Build the lab's container images, one per version of a kind (dnslab/servers/<kind>.yaml,
# `image` and `versions`): from images/common/Dockerfile (or images/<dir>/Dockerfile where a
# kind has its own) with the manifest's build arguments; context images/.
#
#   scripts/build-images.sh [--force] [--all] [NAME...]
#       NAME: kind@version (bind@9.20) or a kind (its default version); default: the lab's
#       images (scripts/manifest.py lab-images): each kind's default version, every version a
#       topology's group names (bind@9.16 for the mobile lab) and every version an
#       experiment's default parameters name; --all: every version of every kind
#
# Base image, per Debian suite (the manifest's image.suite, default bookworm):
# $BASE_IMAGE if set (bookworm only); else debian:<suite>-slim when Docker already
# has it; else dnslab/base:<suite>, made by scripts/make-base-image.sh with
# debootstrap. Nothing is ever pulled from a registry.
# An image is skipped when an image with its tag exists whose
# org.dnslab.content-hash label matches the hash of its build inputs
# (Dockerfile, images/common/, the image's build arguments, base image id).
# Writes build/images.json ({kind@version: image reference}) and prints a summary.
set -eu

REPO=$(cd "$(dirname "$0")/.." && pwd)
IMAGES="$REPO/images"
BUILD="$REPO/build"
LOGDIR="$BUILD/images"

force=0
all=0
names=""
for arg in "$@"; do
    case "$arg" in
    --force) force=1 ;;
    --all) all=1 ;;
    -h | --help)
        sed -n '2,19p' "$0"
        exit 0
        ;;
    -*)
        echo "usage: $0 [--force] [--all] [NAME...]" >&2
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

manifest() {
    python3 "$REPO/scripts/manifest.py" "$@"
}

# The Dockerfile of an image dir: its own, else the common one.
dockerfile_of() {
    if [ -f "$IMAGES/$1/Dockerfile" ]; then
        echo "$IMAGES/$1/Dockerfile"
    else
        echo "$IMAGES/common/Dockerfile"
    fi
}

tab=$(mktemp)
trap 'rm -f "$tab"' EXIT
"$IMAGES/tags.sh" >"$tab"
if [ "$all" = 1 ]; then
    names=$(awk '{ print $1 }' "$tab")
elif [ -z "$names" ]; then
    names=$(manifest lab-images)
fi

summary=""
bases=""
failed=0
for name in $names; do
    # a kind alone is its default version
    key=$(awk -v n="$name" '$1 == n || ($1 ~ "^" n "@" && $8 == "default") { print $1 }' "$tab")
    if [ -z "$key" ]; then
        echo "error: unknown image '$name' (known: $(awk '{ printf "%s ", $1 }' "$tab"))" >&2
        exit 2
    fi
    kind=$key
    dir=$(awk -v k="$key" '$1 == k { print $2 }' "$tab")
    ref=$(awk -v k="$key" '$1 == k { print $5 }' "$tab")
    name=$key
    dockerfile=$(dockerfile_of "$dir")
    suite=$(manifest field "$kind" image.suite)
    args=$(manifest build-args "$kind")
    line=$(base_for "$suite") || exit 1
    base=${line%% *}
    base_id=$(docker image inspect --format '{{.Id}}' "$base")
    bases="$bases$suite: $base (${line#* }, $(echo "$base_id" | cut -c8-19))
"
    hash=$(
        {
            cat "$dockerfile"
            echo "$args"
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
        # one --build-arg per KEY=VALUE line (values may hold spaces)
        set --
        while IFS= read -r arg; do
            set -- "$@" --build-arg "$arg"
        done <<ARGS
$args
ARGS
        # --network host: apt inside the build uses the host's network setup.
        if docker build --force-rm --network host -f "$dockerfile" -t "$ref" \
            --build-arg BASE_IMAGE="$base" "$@" \
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
    summary="$summary${ref%%:*} ${ref#*:} $((size / 1000000)) $secs $status
"
done

# images.json lists every version whose image exists now.
{
    sep="{"
    while read -r key _dir _pkg _ver ref _rest; do
        if docker image inspect "$ref" >/dev/null 2>&1; then
            printf '%s\n  "%s": "%s"' "$sep" "$key" "$ref"
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
    printf '%-22s %-20s %8s %9s  %s\n' "$name" "$tag" "$size" "$secs" "$status"
done
printf '%s' "$bases" | sort -u | sed 's/^/base image for /'
echo "image map: $BUILD/images.json"
exit "$failed"
