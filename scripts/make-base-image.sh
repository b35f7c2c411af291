#!/bin/sh
# Build a local Debian base image (dnslab/base:<suite>) with debootstrap when
# debian:<suite>-slim is not available to Docker (no registry reachable).
#
#   scripts/make-base-image.sh [--force] [SUITE]   # SUITE: bookworm (default), bullseye, trixie
#
# bullseye is the base of the older-BIND image (bind@9.16: BIND 9.16, which
# still fills the additional section of large NAPTR answers); trixie (Debian 13) the base of
# the tools image (dnsperf 2.14, which receives TCP answers over 16 KiB) and of the images of
# the kinds whose manifest says suite: trixie.
# The root file system is scripts/make-rootfs.sh's (the Debian mirror configured for apt on
# this host, with the suite's updates and security, trimmed like the -slim images), then
# `docker import`ed. Skipped when the image already exists (--force rebuilds).
set -eu

REPO=$(cd "$(dirname "$0")/.." && pwd)
force=0
SUITE=bookworm
for arg in "$@"; do
    case "$arg" in
    --force) force=1 ;;
    bookworm | bullseye | trixie) SUITE=$arg ;;
    *)
        echo "error: unknown argument '$arg' (usage: $0 [--force] [bookworm|bullseye|trixie])" >&2
        exit 2
        ;;
    esac
done
IMAGE=${DNSLAB_LOCAL_BASE:-dnslab/base:$SUITE}

if [ "$force" = 0 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
    echo "base image $IMAGE exists; skipping (--force to rebuild)"
    exit 0
fi
command -v docker >/dev/null 2>&1 || {
    echo "error: docker is not installed (apt-get install docker.io)" >&2
    exit 1
}

start=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/dnslab-base.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
"$REPO/scripts/make-rootfs.sh" "$SUITE" "$work/root"
mirror=$(sed -n 's/^URIs: //p' "$work/root/etc/apt/sources.list.d/debian.sources" | head -n 1)

created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
tar -C "$work/root" --numeric-owner -c . | docker import \
    --change 'CMD ["bash"]' \
    --change "LABEL org.opencontainers.image.created=$created" \
    --change "LABEL org.opencontainers.image.source=debootstrap:$SUITE:$mirror" \
    --message "dnslab debootstrap $SUITE minbase" - "$IMAGE" >/dev/null
size=$(docker image inspect --format '{{.Size}}' "$IMAGE")
echo "built $IMAGE ($((size / 1000000)) MB) in $(($(date +%s) - start)) s"
