#!/usr/bin/env bash
# Install what the lab needs on Debian/Ubuntu without starting any host DNS service:
# the DNS servers and load tools for the netns runtime (apt), and the project's virtualenv.
#   scripts/setup.sh            apt packages (when missing) + .venv
#   scripts/setup.sh --test     also what the test suite needs: Docker, Chromium, sshd
#   scripts/setup.sh --venv     only the virtualenv
#   scripts/setup.sh --docker   only what `make images` needs: Docker and debootstrap (no venv)
set -euo pipefail
cd "$(dirname "$0")/.."

# The server kinds' packages come from their manifests (dnslab/servers/<kind>.yaml), which
# scripts/manifest.py reads with the host's python3 and PyYAML (also images/tags.sh and
# scripts/build-images.sh).
SERVER_PACKAGES=()
if [[ "${1:-}" != "--venv" ]]; then
  if ! python3 -c 'import yaml' 2>/dev/null; then
    if [[ $(id -u) != 0 ]]; then
      echo "error: python3 lacks PyYAML, which reads the server manifests (hint: sudo apt-get install -y python3-yaml, or run: sudo make setup)" >&2
      exit 2
    fi
    echo "setup: installing python3-yaml (reads the server manifests)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-yaml >/dev/null
  fi
  mapfile -t SERVER_PACKAGES < <(python3 scripts/manifest.py host-packages)
fi
PY=${PYTHON:-python3}
# Whether the virtualenv's python has its C headers: NetfilterQueue (below) has no wheel and
# builds from source, which Debian's own python3 cannot without python3-dev (a pyenv or
# source-built python has them).
py_has_headers() {
  "$PY" -c 'import os, sysconfig
raise SystemExit(not os.path.exists(os.path.join(sysconfig.get_path("include"), "Python.h")))' \
    2>/dev/null
}
APT_PACKAGES=("${SERVER_PACKAGES[@]}"
              iproute2 procps iptables python3-venv
              # the nodes' TLS certificates (DoT, DoH listeners: dnslab/certificates.py)
              openssl
              # WAN emulation where the kernel has no netem: python NetfilterQueue builds on these
              libnetfilter-queue-dev gcc util-linux
              # a node whose host package is too old (Debian 12's dnsperf) runs from a root
              # file system of a newer suite, made with it (dnslab/runtime/rootfs.py)
              debootstrap)
if [[ "${1:-}" != "--venv" ]] && ! py_has_headers; then APT_PACKAGES+=(python3-dev); fi

# images need a Docker engine and debootstrap (for a local base); the report test a browser;
# the across-hosts tests emulate lab hosts, each running sshd and the lab's host commands
# with Debian's python3 (dnslab.hosts.HOST_PYTHON_PACKAGES)
DOCKER_APT_PACKAGES=(docker.io debootstrap)
HOST_PYTHON_PACKAGES=(python3-yaml python3-dnspython python3-psutil)
TEST_APT_PACKAGES=("${DOCKER_APT_PACKAGES[@]}" chromium poppler-utils openssh-server
                   openssh-client "${HOST_PYTHON_PACKAGES[@]}")
case "${1:-}" in
  --test) APT_PACKAGES+=("${TEST_APT_PACKAGES[@]}") ;;
  --docker) APT_PACKAGES=("${DOCKER_APT_PACKAGES[@]}") ;;
esac

need_apt=()
if [[ "${1:-}" != "--venv" ]]; then
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || need_apt+=("$pkg")
  done
fi

if (( ${#need_apt[@]} )); then
  if [[ $(id -u) != 0 ]]; then
    echo "error: missing packages: ${need_apt[*]} (hint: sudo apt-get install -y --no-install-recommends ${need_apt[*]}, or run: sudo make setup)" >&2
    exit 2
  fi
  echo "setup: installing ${need_apt[*]}"
  # The lab runs the daemons itself: keep apt from starting the packaged host services.
  policy=/usr/sbin/policy-rc.d
  restore_policy=""
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; restore_policy=1
  fi
  trap '[[ -n "$restore_policy" ]] && rm -f "$policy"' EXIT
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  # policy-rc.d kept the new services from starting; also keep them from starting at boot
  # (only the units of packages installed just now: a service the host had is left alone).
  if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
    declare -A unit_of=()
    while read -r pkg unit; do unit_of[$pkg]=$unit; done < <(python3 scripts/manifest.py systemd-units)
    unit_of[openssh-server]=ssh  # installed for the emulated hosts' own sshd only
    for pkg in "${need_apt[@]}"; do
      [[ -n "${unit_of[$pkg]:-}" ]] && systemctl disable "${unit_of[$pkg]}" >/dev/null 2>&1 || true
    done
  fi
fi

if [[ "${1:-}" == "--docker" ]]; then exit 0; fi

if [[ ! -x .venv/bin/python ]] || [[ pyproject.toml -nt .venv/.installed ]]; then
  if ! py_has_headers; then
    echo "error: $PY has no C headers (Python.h), which NetfilterQueue's build needs (hint: sudo apt-get install -y python3-dev, or run: sudo make setup)" >&2
    exit 2
  fi
fi
if [[ ! -x .venv/bin/python ]] || [[ pyproject.toml -nt .venv/.installed ]]; then
  echo "setup: creating the virtualenv in .venv"
  "$PY" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[dev]'
  touch .venv/.installed
fi
echo "setup: ready"
