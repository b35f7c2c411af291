#!/bin/sh
# The image of each version of each kind (`kind@version`), and its tag, from the kinds'
# manifests (dnslab/servers/<kind>.yaml, `image` and `versions`; printed by
# scripts/manifest.py). One image per version: bind@9.16, bind@9.18 and bind@9.20 are
# dnslab/bind9 with three tags.
#
# Tag rule (dnslab/servers/manifest.py, Image.tag): the pinned Debian package version
# without its epoch, with every character Docker forbids in a tag ('~', '+', ':') as '-'.
# Example: bind9 1:9.18.49-1~deb12u3 -> dnslab/bind9:9.18.49-1-deb12u3.
#
#   images/tags.sh            # lines: <kind@version> <image-dir> <package> <version> <reference>
#                             #        <suite> <group> <default|other>
#   images/tags.sh --json     # {"bind@9.18": "dnslab/bind9:9.18.49-1-deb12u3", ...}
#   images/tags.sh KIND[@VERSION]   # the reference of one version (KIND: its default)
#   images/tags.sh --topologies [DIR]
#       # set the image of each group in DIR/*.clab.yml (default: topologies/) named as the
#       # table's <group> (the kind for its default version, bind916 for bind@9.16) to the
#       # reference above: after a version bump in a manifest, the one edit by hand
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
        while read -r key _dir _pkg _ver ref _rest; do
            printf '%s"%s": "%s"' "$sep" "$key" "$ref"
            sep=", "
        done
        echo "}"
    }
    ;;
--topologies)
    dir=${2:-$HERE/../topologies}
    table | while read -r _key image_dir _pkg _ver ref _suite group _default; do
        for file in "$dir"/*.clab.yml; do
            sed -i -E "s#^(    $group: \{image: )dnslab/$image_dir:[^,} ]+#\1$ref#" "$file"
        done
    done
    ;;
-*)
    echo "usage: $0 [--json | --topologies [DIR] | KIND]" >&2
    exit 2
    ;;
*)
    ref=$(table | awk -v k="$1" '$1 == k || ($1 ~ "^" k "@" && $8 == "default") { print $5 }')
    [ -n "$ref" ] || {
        echo "error: unknown kind or version '$1' (known: $(table | awk '{ printf "%s ", $1 }'))" >&2
        exit 1
    }
    echo "$ref"
    ;;
esac
