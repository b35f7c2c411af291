#!/bin/sh
# Start a Docker engine for the lab if none answers; `--stop` stops only the
# dockerd this script started (recorded in build/dockerd.pid).
#
# When this host's capability bounding set lacks capabilities, privileged
# containers (containerlab starts every node privileged) cannot start under
# plain runc; the dockerd started here then gets scripts/runc-capdrop (runc
# minus those capabilities) as its default OCI runtime, and says which it
# drops. An engine that already answers is used as it is, never reconfigured.
#
#   scripts/start-dockerd.sh          # ensure an engine answers (waits up to 60 s)
#   scripts/start-dockerd.sh --stop   # stop the dockerd we started, if any
#   scripts/start-dockerd.sh --status # exit 0 when an engine answers
set -eu

REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$REPO/build"
PIDFILE="$BUILD/dockerd.pid"
LOG="$BUILD/dockerd.log"
WAIT_S=${DNSLAB_DOCKERD_WAIT:-60}

engine_answers() {
    docker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

our_pid() {
    # Prints the recorded pid only if that process still is a dockerd.
    [ -f "$PIDFILE" ] || return 1
    pid=$(cat "$PIDFILE")
    [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] || return 1
    [ "$(cat "/proc/$pid/comm")" = dockerd ] || return 1
    echo "$pid"
}

case "${1:-}" in
--status)
    engine_answers
    exit $?
    ;;
--stop)
    if pid=$(our_pid); then
        echo "stopping dockerd (pid $pid, started by this script)"
        kill -TERM "$pid"
        i=0
        while [ -d "/proc/$pid" ] && [ $i -lt 30 ]; do sleep 1; i=$((i + 1)); done
        if [ -d "/proc/$pid" ]; then
            echo "dockerd did not stop within 30 s; sending KILL" >&2
            kill -KILL "$pid" || true
        fi
        rm -f "$PIDFILE"
    else
        rm -f "$PIDFILE"
        echo "no dockerd started by this script is running; nothing to stop"
    fi
    exit 0
    ;;
"") ;;
*)
    echo "usage: $0 [--stop|--status]" >&2
    exit 2
    ;;
esac

if engine_answers; then
    echo "docker engine answers: $(docker version --format '{{.Server.Version}}')"
    exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
    echo "error: no Docker engine answers and dockerd is not installed (apt-get install docker.io)" >&2
    exit 1
fi
if [ "$(id -u)" != 0 ]; then
    echo "error: no Docker engine answers and starting dockerd needs root" >&2
    exit 1
fi
if pid=$(our_pid); then
    echo "dockerd (pid $pid) started earlier is not answering yet; waiting"
else
    mkdir -p "$BUILD"
    set --
    dropped=$("$REPO/scripts/runc-capdrop" --list)
    if [ "$dropped" != "(none)" ]; then
        echo "the capability bounding set lacks $dropped: dockerd's default runtime is" \
            "scripts/runc-capdrop (runc without $dropped)"
        set -- --add-runtime "dnslab-runc=$REPO/scripts/runc-capdrop" --default-runtime dnslab-runc
    fi
    echo "starting dockerd (log: $LOG)"
    # setsid: the engine must outlive the shell (and test session) that started it.
    setsid dockerd "$@" >>"$LOG" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
fi
i=0
while ! engine_answers; do
    if ! our_pid >/dev/null; then
        echo "error: dockerd exited; last log lines:" >&2
        tail -n 20 "$LOG" >&2
        rm -f "$PIDFILE"
        exit 1
    fi
    if [ $i -ge "$WAIT_S" ]; then
        echo "error: dockerd did not answer within $WAIT_S s; see $LOG" >&2
        exit 1
    fi
    sleep 1
    i=$((i + 1))
done
echo "docker engine answers: $(docker version --format '{{.Server.Version}}') (pid $(cat "$PIDFILE"))"
