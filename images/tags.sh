#!/bin/sh
# The image each lab image kind runs, and its tag, from the kinds' manifests
# (dnslab/servers/<kind>.yaml, field `image`; printed by scripts/manifest.py).
# Image kinds are the server kinds (dnslab.server) plus variants a topology node names
# with the label dnslab.image: bind916 = BIND 9.16 from Debian 11 (images/bind9-bullseye).
#
# Tag rule (dnslab/servers/manifest.py, Image.tag): the pinned Debian package version
# without its epoch, with every character Docker forbids in a tag ('~', '+', ':') as '-'.
# Example: bind9 1:9.18.49-1~deb12u3 -> dnslab/bind9:9.18.49-1-deb12u3.
#
#   images/tags.sh            # lines: <image-kind> <image-dir> <package> <version> <reference>
#   images/tags.sh --json     # {"bind": "dnslab/bind9:9.18.49-1-deb12u3", ...}
#   images/tags.sh KIND       # the reference for one image kind
#   images/tags.sh --topologies [DIR]
#       # set the image of each image-kind group in DIR/*.clab.yml (default: topologies/) to
#       # the reference above: after a version bump in a manifest, the one edit by hand
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)

table() {
    python3 "$HERE/../scripts/manifest.py" images
}

case "${1:-}" in
"")
    table
    ;;
--json)
    table | {
        sep="{"
        while read -r kind _dir _pkg _ver ref; do
            printf '%s"%s": "%s"' "$sep" "$kind" "$ref"
            sep=", "
        done
        echo "}"
    }
    ;;
--topologies)
    dir=${2:-$HERE/../topologies}
    table | while read -r kind image_dir _pkg _ver ref; do
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
    ref=$(table | awk -v k="$1" '$1 == k { print $5 }')
    [ -n "$ref" ] || { echo "error: unknown server kind '$1'" >&2; exit 1; }
    echo "$ref"
    ;;
esac
