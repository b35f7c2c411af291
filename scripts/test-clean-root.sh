#!/usr/bin/env bash
# README's setup and an experiment at SCALE=ci in a clean Debian root file system, as a
# newcomer on a fresh Debian host runs them: debootstrap (minbase, plus make and git), the
# project cloned into it, then README's first command in a chroot, with the system python3
# (no headers, no pip: `make setup` must install what it needs), on the netns runtime.
#
#   scripts/test-clean-root.sh SUITE [make-arguments]    SUITE: bookworm (Debian 12), trixie (13)
#   default make-arguments: EXP=xfr-30k-zones SCALE=ci   (README's first command at SCALE=ci)
#
# Prints the seconds each phase takes (debootstrap, make setup with its lines time-stamped,
# the experiment), the root's python3 and BIND, and the run folder; exits non-zero when a
# phase fails. The clone is the repository's HEAD with the work tree's changes on top.
# Caches under build/clean-root: the debootstrapped root as a tarball per suite (a second run
# unpacks it) and apt's downloaded packages per suite; pip's download cache is this host's
# (`pip cache dir`: the same files, fetched once). The chroot reaches the registries as this
# host does: its resolver, CA certificates and pip configuration (PIP_* variables,
# /etc/pip.conf, ~/.config/pip, ~/.pip). The runs are written to a host folder; on exit, pass
# or fail, the lab is taken down, any process left in the root ended, everything mounted
# unmounted and the root removed.
#   LAB_LOCK=/path/lockfile   hold this lock (flock) from the lab's start to the end: network
#                             namespace and veth names are host-wide, also from a chroot
#   RESULTS=/path             where the runs go (default build/clean-root/<suite>.results)
#   KEEP_ROOT=1               leave the unpacked root in build/clean-root/<suite>.root
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
SUITE=${1:-}
case "$SUITE" in
bookworm | trixie) shift ;;
*)
    echo "error: unknown suite '${SUITE}' (usage: $0 bookworm|trixie [make-arguments])" >&2
    exit 2
    ;;
esac
MAKE_ARGS=("$@")
((${#MAKE_ARGS[@]})) || MAKE_ARGS=(EXP=xfr-30k-zones SCALE=ci)
[[ $(id -u) == 0 ]] || { echo "error: debootstrap and chroot need root (hint: sudo $0 $SUITE)" >&2; exit 2; }
for tool in debootstrap chroot git flock mountpoint; do
    command -v "$tool" >/dev/null || {
        echo "error: $tool is not installed (hint: apt-get install -y debootstrap git util-linux)" >&2
        exit 2
    }
done

CACHE=$REPO/build/clean-root
ROOT=$CACHE/$SUITE.root
TARBALL=$CACHE/$SUITE.tar
ARCHIVES=$CACHE/$SUITE.archives
RESULTS=${RESULTS:-$CACHE/$SUITE.results}
mkdir -p "$CACHE" "$ARCHIVES/partial" "$RESULTS"

phase_start=$(date +%s)
phase() { # phase WHAT: the seconds since the last phase ended
    local now
    now=$(date +%s)
    echo "clean-root $SUITE: $1 $((now - phase_start)) s"
    phase_start=$now
}
stamp() { # each line read, prefixed with the seconds since the phase began
    local line
    while IFS= read -r line; do printf '[%4d s] %s\n' $(($(date +%s) - phase_start)) "$line"; done
}

passed_env=()
in_root() {
    chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        DEBIAN_FRONTEND=noninteractive "${passed_env[@]}" "$@"
}

cleanup() {
    local status=$? pid
    trap - EXIT INT TERM
    if mountpoint -q "$ROOT"; then
        if [[ -x $ROOT/root/dnslab/.venv/bin/dnslab ]]; then
            in_root bash -c 'cd /root/dnslab && .venv/bin/dnslab lab down' >/dev/null 2>&1 || true
        fi
        # whatever still runs inside the root was started here
        for pid in $(ls /proc | grep -E '^[0-9]+$'); do
            if [[ $(readlink "/proc/$pid/root" 2>/dev/null) == "$ROOT" ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
        done
        # below the root: proc, sys, dev, run (with the lab's /run/netns), apt's cache, results
        umount -R "$ROOT" 2>/dev/null || umount -R -l "$ROOT" || true
    fi
    if [[ -z ${KEEP_ROOT:-} ]] && ! grep -qF " $ROOT/" /proc/mounts; then rm -rf "$ROOT"; fi
    exit "$status"
}
trap cleanup EXIT INT TERM

# shellcheck source=scripts/debian-apt.sh
. "$(dirname "$0")/debian-apt.sh"
mirror=$(host_debian_mirror)

rm -rf "$ROOT"
mkdir -p "$ROOT"
if [[ -s $TARBALL ]]; then
    tar -C "$ROOT" --numeric-owner -xf "$TARBALL"
    phase "unpack the cached root"
else
    # make and git: README's commands are make targets in a clone (a fresh Debian has neither)
    debootstrap --variant=minbase --components=main --include=make,git --cache-dir="$ARCHIVES" \
        "$SUITE" "$ROOT" "$mirror" >"$CACHE/$SUITE.debootstrap.log" 2>&1 || {
        tail -n 30 "$CACHE/$SUITE.debootstrap.log" >&2
        exit 1
    }
    write_apt_sources "$ROOT" "$SUITE" "$mirror"
    rm -f "$ROOT/var/cache/apt/archives/"*.deb
    tar -C "$ROOT" --numeric-owner -cf "$TARBALL.part" . && mv "$TARBALL.part" "$TARBALL"
    phase "debootstrap"
fi

# `ip netns` wants / to be a mount point (it makes /run/netns a shared mount below it)
mount --bind "$ROOT" "$ROOT"
mount -t proc proc "$ROOT/proc"
mount --rbind /sys "$ROOT/sys" && mount --make-rslave "$ROOT/sys"
mount --rbind /dev "$ROOT/dev" && mount --make-rslave "$ROOT/dev"
mount -t tmpfs -o mode=0755 tmpfs "$ROOT/run"
mount --bind "$ARCHIVES" "$ROOT/var/cache/apt/archives"
pip_cache=$(python3 -m pip cache dir 2>/dev/null || true)
if [[ -n $pip_cache && -d $pip_cache ]]; then
    mkdir -p "$ROOT/root/.cache/pip" && mount --bind "$pip_cache" "$ROOT/root/.cache/pip"
fi

# how this host reaches the registries: its resolver, CA certificates and pip configuration
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
mkdir -p "$ROOT/etc/ssl/certs" "$ROOT/usr/local/share/ca-certificates"
cp -rL /etc/ssl/certs/. "$ROOT/etc/ssl/certs/" 2>/dev/null || true
if [[ -d /usr/local/share/ca-certificates ]]; then
    cp -rL /usr/local/share/ca-certificates/. "$ROOT/usr/local/share/ca-certificates/"
fi
if [[ -f /etc/pip.conf ]]; then cp -L /etc/pip.conf "$ROOT/etc/pip.conf"; fi
for dir in .config/pip .pip; do
    if [[ -d $HOME/$dir ]]; then mkdir -p "$ROOT/root/$dir" && cp -rL "$HOME/$dir/." "$ROOT/root/$dir/"; fi
done
while IFS='=' read -r name value; do
    case "$name" in
    PIP_* | SSL_CERT_* | REQUESTS_CA_BUNDLE | http_proxy | https_proxy | no_proxy | HTTP_PROXY | HTTPS_PROXY | NO_PROXY)
        passed_env+=("$name=$value")
        ;;
    esac
done < <(env)

# the project as a newcomer has it: a clone (HEAD), here with the work tree's changes on top
git clone -q "$REPO" "$ROOT/root/dnslab"
git -C "$REPO" ls-files -z --cached --others --exclude-standard |
    (cd "$REPO" && tar --null -T - -cf - 2>/dev/null) | tar -C "$ROOT/root/dnslab" -xf -
mkdir -p "$ROOT/root/dnslab/results"
mount --bind "$RESULTS" "$ROOT/root/dnslab/results" # the runs outlive the root

echo "clean-root $SUITE: $(in_root sh -c '. /etc/os-release; echo "$PRETTY_NAME"'); python3: $(in_root sh -c 'command -v python3 || echo none')"
phase "prepare the chroot"
in_root bash -c 'cd /root/dnslab && make setup' 2>&1 | stamp || {
    echo "clean-root $SUITE: make setup failed" >&2
    exit 1
}
phase "make setup"
echo "clean-root $SUITE: $(in_root python3 --version); $(in_root named -V | head -n 1)"

if [[ -n ${LAB_LOCK:-} ]]; then # held until exit: the lab's teardown is inside it too
    exec {lock_fd}>"$LAB_LOCK"
    flock "$lock_fd"
    phase "waiting for the lab lock"
fi
in_root bash -c "cd /root/dnslab && make experiment ${MAKE_ARGS[*]}" || {
    echo "clean-root $SUITE: make experiment ${MAKE_ARGS[*]} failed" >&2
    exit 1
}
phase "make experiment ${MAKE_ARGS[*]}"
run=$(ls -td "$RESULTS"/*/*/ 2>/dev/null | head -n 1)
echo "clean-root $SUITE: run folder ${run%/}"
