#!/usr/bin/env bash
# Generates the SQLCipher amalgamation (sqlite3.c, include/sqlite3.h) compiled into
# libcblite.so, from Debian's `sqlcipher` source package (a shared
# libsqlcipher would be silently replaced by a host program's libsqlite3).
#
# A 4.x source package is required (3.4.1, bookworm's, is SQLite 3.15 without JSON,
# UPSERT or RETURNING). When the configured apt sources carry no 4.x source, a deb-src
# entry for the next Debian release is added, using the mirror that the system's own apt
# configuration names. Idempotent: does nothing when the amalgamation is present.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${CBLITE_DEPS_DIR:-$here/../../.build-deps}
out_c=$here/sqlite3.c
out_h=$here/include/sqlite3.h
if [[ -s $out_c && -s $out_h ]]; then exit 0; fi
mkdir -p "$work" "$here/include"
work=$(cd "$work" && pwd)

newest_source_version() {
  apt-cache showsrc sqlcipher 2>/dev/null | awk '/^Version:/ {print $2}' | sort -V | tail -1 || true
}

system_mirror() {
  # The Debian mirror of the system's apt configuration (deb822 or one-line format).
  local uri=""
  if compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
    uri=$(awk '/^URIs:/ {print $2}' /etc/apt/sources.list.d/*.sources | grep -m1 -E '/debian/?$' || true)
  fi
  if [[ -z $uri && -f /etc/apt/sources.list ]]; then
    uri=$(awk '$1=="deb" {for (i=2;i<=NF;i++) if ($i ~ /^(https?|file):/) {print $i; exit}}' /etc/apt/sources.list | grep -m1 -E '/debian/?$' || true)
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

version=$(newest_source_version)
if [[ -z $version || ${version%%.*} -lt 4 ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "generate.sh: no sqlcipher 4.x source package in apt's sources; run as root once" >&2
    echo "  (or add a deb-src line for Debian trixie) so it can be fetched." >&2
    exit 1
  fi
  mirror=$(system_mirror)
  cat > /etc/apt/sources.list.d/cblite-sqlcipher-src.sources <<SRC
Types: deb-src
URIs: $mirror
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  apt-get update -qq
  version=$(newest_source_version)
fi
if [[ -z $version || ${version%%.*} -lt 4 ]]; then
  echo "generate.sh: no sqlcipher 4.x source package available (found '${version:-none}')" >&2
  exit 1
fi

upstream=${version#*:}; upstream=${upstream%-*}
src=$work/sqlcipher-$upstream
if [[ ! -f $src/configure ]]; then
  (cd "$work" && rm -rf "sqlcipher-$upstream" && apt-get source -qq "sqlcipher=$version" >/dev/null 2>&1 \
     || (cd "$work" && apt-get source --download-only -qq "sqlcipher=$version" && dpkg-source -x "sqlcipher_${version#*:}.dsc" >/dev/null))
fi
[[ -f $src/configure ]] || { echo "generate.sh: unpacking sqlcipher $version failed" >&2; exit 1; }

cd "$src"
if [[ ! -s sqlite3.c ]]; then
  ./configure --enable-tempstore=yes CFLAGS="-DSQLITE_HAS_CODEC -DSQLITE_TEMP_STORE=2" \
      LDFLAGS="-lcrypto" >"$work/configure.log" 2>&1 \
    || { echo "generate.sh: configure failed, see $work/configure.log" >&2; exit 1; }
  make sqlite3.c >"$work/make.log" 2>&1 \
    || { echo "generate.sh: amalgamation failed, see $work/make.log" >&2; exit 1; }
fi
cp sqlite3.c "$out_c.tmp" && mv "$out_c.tmp" "$out_c"
cp sqlite3.h "$out_h.tmp" && mv "$out_h.tmp" "$out_h"
echo "generate.sh: SQLCipher amalgamation from Debian sqlcipher $version"
