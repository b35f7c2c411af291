#!/bin/sh
# Build a trimmed Debian root file system with debootstrap, optionally with packages in it:
# the base of a local base image (scripts/make-base-image.sh) and the root file system a
# netns node runs from when the host's packages are another version (dnslab/runtime/rootfs.py).
#
#   scripts/make-rootfs.sh SUITE DIR [PACKAGE...]     # PACKAGE: name or name=version
#
# SUITE: a Debian suite debootstrap knows (bullseye, bookworm, trixie, sid). The system comes
# from the Debian mirror configured for apt on this host (/etc/apt/sources.list*), with the
# suite's -updates and -security (none for sid) as the official images have them, trimmed
# like the -slim images (no docs, man pages or translations). The packages are installed
# without recommends and without starting a service; their versions are written to
# DIR/usr/share/dnslab/versions.txt (as the images record theirs). DIR must not exist; it is
# removed again on failure. Needs root.
set -eu

usage="usage: $0 SUITE DIR [PACKAGE...]"
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
SUITE=$1
root=$2
shift 2
case "$SUITE" in
bullseye | bookworm | trixie | forky | sid) ;;
*)
    echo "error: unknown suite '$SUITE' (bullseye, bookworm, trixie, forky or sid)" >&2
    exit 2
    ;;
esac
[ ! -e "$root" ] || { echo "error: $root exists" >&2; exit 2; }
command -v debootstrap >/dev/null 2>&1 || {
    echo "error: debootstrap is not installed (apt-get install debootstrap)" >&2
    exit 1
}
[ "$(id -u)" = 0 ] || { echo "error: debootstrap needs root" >&2; exit 1; }

# shellcheck source=scripts/debian-apt.sh
. "$(dirname "$0")/debian-apt.sh"
mirror=$(host_debian_mirror)

log=$(mktemp "${TMPDIR:-/tmp}/dnslab-rootfs.XXXXXX")
explained=0 # set when the failure was said in one line already
cleanup() {
    status=$?
    if [ "$status" != 0 ]; then
        [ "$explained" = 1 ] || tail -n 30 "$log" >&2
        rm -rf "$root"
    fi
    rm -f "$log"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "debootstrap --variant=minbase $SUITE from $mirror"
# a mirror that drops a download now and then ("Couldn't download packages: ...") fails a
# whole debootstrap: try three times
for attempt in 1 2 3; do
    if debootstrap --variant=minbase --components=main "$SUITE" "$root" "$mirror" >"$log" 2>&1; then
        break
    fi
    [ "$attempt" -lt 3 ] || exit 1
    echo "debootstrap failed ($(grep -m1 '^E:' "$log" || tail -n1 "$log")); retrying"
    rm -rf "$root"
done

# apt sources inside the root: same mirror, with updates and security (sid has neither).
write_apt_sources "$root" "$SUITE" "$mirror"

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

# Bring in <suite>-updates and -security, as the official images do; then the packages, with
# no service started by their scripts (policy-rc.d).
cp /etc/resolv.conf "$root/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
chroot "$root" sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get -y -q upgrade' >>"$log" 2>&1
if [ $# -gt 0 ]; then
    echo "installing $*"
    if ! chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >>"$log" 2>&1; then
        # a pinned version the archive no longer carries: one line naming those it does
        for package in "$@"; do
            case "$package" in *=*) ;; *) continue ;; esac
            name=${package%%=*} version=${package#*=}
            carried=$(chroot "$root" apt-cache madison "$name" 2>/dev/null | awk '{ print $3 }' | sort -u | tr '\n' ' ')
            case " $carried " in *" $version "*) continue ;; esac
            echo "error: the $SUITE archive carries no $name $version (it carries: ${carried:-none}); update the kind's manifest (dnslab/servers/)" >&2
            explained=1
        done
        exit 1
    fi
    mkdir -p "$root/usr/share/dnslab"
    names=$(for package in "$@"; do echo "${package%%=*}"; done)
    # shellcheck disable=SC2086 # one argument per package name
    chroot "$root" dpkg-query -W $names >"$root/usr/share/dnslab/versions.txt"
    cat "$root/usr/share/dnslab/versions.txt"
fi
rm -f "$root/usr/sbin/policy-rc.d"

find "$root/usr/share/doc" -mindepth 2 ! -name copyright -type f -delete 2>/dev/null || true
rm -rf "$root/usr/share/man/"* "$root/usr/share/info/"* "$root/usr/share/locale/"* \
    "$root/var/cache/apt/"*.bin "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"* \
    "$root/var/log/"*.log "$root/tmp/"*
: >"$root/etc/resolv.conf"
echo "$SUITE" >"$root/etc/debian_chroot"
