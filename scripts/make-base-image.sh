#!/bin/sh
# Build a local Debian base image (dnslab/base:<suite>) with debootstrap when
# debian:<suite>-slim is not available to Docker (no registry reachable).
#
#   scripts/make-base-image.sh [--force] [SUITE]   # SUITE: bookworm (default), bullseye, trixie
#
# bullseye is the base of the older-BIND image (images/bind9-bullseye: BIND 9.16, which
# still fills the additional section of large NAPTR answers); trixie (Debian 13) the base of
# the images of Debian 13's packages (images of the kinds whose manifest says suite: trixie).
# The root file system comes from the Debian mirror configured for apt on this
# host (/etc/apt/sources.list*), is trimmed like the -slim images and then
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
for tool in debootstrap docker; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "error: $tool is not installed (apt-get install $tool)" >&2
        exit 1
    }
done
[ "$(id -u)" = 0 ] || { echo "error: debootstrap needs root" >&2; exit 1; }

# The first Debian (not security) mirror apt uses here, from one-line or deb822 sources.
mirror=$(
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
        awk '/^deb[ \t]/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }
             /^URIs:/ { print $2; exit }' |
        grep -v security | head -n 1
)
mirror=${mirror:-http://deb.debian.org/debian}
mirror=${mirror%/}
security_mirror=$(echo "$mirror" | sed 's#/debian$#/debian-security#')

start=$(date +%s)
root=$(mktemp -d "${TMPDIR:-/tmp}/dnslab-base.XXXXXX")
trap 'rm -rf "$root"' EXIT INT TERM
echo "debootstrap --variant=minbase $SUITE from $mirror"
debootstrap --variant=minbase --components=main "$SUITE" "$root" "$mirror" >"$root.log" 2>&1 || {
    tail -n 30 "$root.log" >&2
    rm -f "$root.log"
    exit 1
}
rm -f "$root.log"

# apt sources inside the image: same mirror, with updates and security.
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security_mirror
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF

# Bring in <suite>-updates and -security, as the official images do.
cp /etc/resolv.conf "$root/etc/resolv.conf"
chroot "$root" sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get -y -q upgrade' >"$root.log" 2>&1 || {
    tail -n 30 "$root.log" >&2
    rm -f "$root.log"
    exit 1
}
rm -f "$root.log"

# Trim as the official -slim images do: no docs, man pages or translations in later installs.
cat >"$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
EOF
cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
EOF
cat >"$root/etc/apt/apt.conf.d/docker-no-recommends" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
EOF
find "$root/usr/share/doc" -mindepth 2 ! -name copyright -type f -delete 2>/dev/null || true
rm -rf "$root/usr/share/man/"* "$root/usr/share/info/"* "$root/usr/share/locale/"* \
    "$root/var/cache/apt/"*.bin "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"* \
    "$root/var/log/"*.log "$root/tmp/"*
: >"$root/etc/resolv.conf"
echo "$SUITE" >"$root/etc/debian_chroot"

created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
tar -C "$root" --numeric-owner -c . | docker import \
    --change 'CMD ["bash"]' \
    --change "LABEL org.opencontainers.image.created=$created" \
    --change "LABEL org.opencontainers.image.source=debootstrap:$SUITE:$mirror" \
    --message "dnslab debootstrap $SUITE minbase" - "$IMAGE" >/dev/null
size=$(docker image inspect --format '{{.Size}}' "$IMAGE")
echo "built $IMAGE ($((size / 1000000)) MB) in $(($(date +%s) - start)) s"
