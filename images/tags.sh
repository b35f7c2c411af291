#!/bin/sh
# The one place that says which image each lab server kind runs, and its tag.
# Image kinds are the server kinds (dnslab.server) plus variants a topology node names
# with the label dnslab.image: bind916 = BIND 9.16 from Debian 11 (images/bind9-bullseye).
#
# Tag rule: the pinned Debian package version (images/versions.env) without its
# epoch, with every character Docker forbids in a tag ('~', '+', ':') as '-'.
# Example: bind9 1:9.18.49-1~deb12u3 -> dnslab/bind9:9.18.49-1-deb12u3.
#
#   images/tags.sh            # lines: <image-kind> <image-dir> <package> <version> <reference>
#   images/tags.sh --json     # {"bind": "dnslab/bind9:9.18.49-1-deb12u3", ...}
#   images/tags.sh KIND       # the reference for one image kind
#   images/tags.sh --topologies [DIR]
#       # set the image of each image-kind group in DIR/*.clab.yml (default: topologies/) to
#       # the reference above: after a version bump in versions.env, the one edit by hand
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$HERE/versions.env"

tag_of() {
    echo "$1" | sed -e 's/^[0-9]*://' -e 's/[~+:]/-/g'
}

# server kind (dnslab.server label), image dir, main package, its version
table() {
    echo "bind bind9 bind9 $BIND9_VERSION"
    echo "knot knot knot $KNOT_VERSION"
    echo "nsd nsd nsd $NSD_VERSION"
    echo "dnsdist dnsdist dnsdist $DNSDIST_VERSION"
    echo "unbound unbound unbound $UNBOUND_VERSION"
    echo "pdns pdns pdns-server $PDNS_VERSION"
    echo "tools tools dnsperf $DNSPERF_VERSION"
    echo "bind916 bind9-bullseye bind9 $BIND9_BULLSEYE_VERSION"
}

case "${1:-}" in
"")
    table | while read -r kind dir pkg ver; do
        echo "$kind $dir $pkg $ver dnslab/$dir:$(tag_of "$ver")"
    done
    ;;
--json)
    table | {
        sep="{"
        while read -r kind dir pkg ver; do
            printf '%s"%s": "dnslab/%s:%s"' "$sep" "$kind" "$dir" "$(tag_of "$ver")"
            sep=", "
        done
        echo "}"
    }
    ;;
--topologies)
    dir=${2:-$HERE/../topologies}
    table | while read -r kind image_dir _pkg ver; do
        ref="dnslab/$image_dir:$(tag_of "$ver")"
        for file in "$dir"/*.clab.yml; do
            sed -i -E "s#^(    $kind: \{image: )dnslab/$image_dir:[^,} ]+#\1$ref#" "$file"
        done
    done
    ;;
-*)
    echo "usage: $0 [--json | --topologies [DIR] | KIND]" >&2
    exit 2
    ;;
*)
    ref=$(table | awk -v k="$1" '$1 == k { print $2, $4 }')
    [ -n "$ref" ] || { echo "error: unknown server kind '$1'" >&2; exit 1; }
    set -- $ref
    echo "dnslab/$1:$(tag_of "$2")"
    ;;
esac
