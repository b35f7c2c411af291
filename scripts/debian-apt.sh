# Sourced by the scripts that make Debian root file systems (make-rootfs.sh,
# test-clean-root.sh): where this host's apt gets Debian from, and a root's apt sources.
# POSIX sh.

# host_debian_mirror: the first Debian (not security) mirror apt uses here, from one-line or
# deb822 sources, without a trailing slash (deb.debian.org when none is found).
host_debian_mirror() {
    found=$(
        cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
            /etc/apt/sources.list.d/*.sources 2>/dev/null |
            awk '/^deb[ \t]/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }
                 /^URIs:/ { print $2; exit }' |
            { grep -v security || true; } | head -n 1
    )
    found=${found:-http://deb.debian.org/debian}
    echo "${found%/}"
}

# write_apt_sources ROOT SUITE MIRROR: ROOT's apt sources as the official images have them:
# the suite and its -updates from MIRROR, its -security from the mirror's debian-security
# (sid has neither).
write_apt_sources() {
    rm -f "$1/etc/apt/sources.list"
    if [ "$2" = sid ]; then
        printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
            "$3" "$2" /usr/share/keyrings/debian-archive-keyring.gpg \
            >"$1/etc/apt/sources.list.d/debian.sources"
        return
    fi
    printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\nSigned-By: %s\n\nTypes: deb\nURIs: %s\nSuites: %s-security\nComponents: main\nSigned-By: %s\n' \
        "$3" "$2" "$2" /usr/share/keyrings/debian-archive-keyring.gpg \
        "$(echo "$3" | sed 's#/debian$#/debian-security#')" "$2" \
        /usr/share/keyrings/debian-archive-keyring.gpg \
        >"$1/etc/apt/sources.list.d/debian.sources"
}
