#!/usr/bin/env bash
# Generates the SQLCipher amalgamation (sqlite3.c, include/sqlite3.h) compiled into
# libcblite.so, from Debian's `sqlcipher` source package (a shared
# libsqlcipher would be silently replaced by a host program's libsqlite3).
#
# Exactly the version pinned in cblite/pinned_sqlite.h: cblite's C reads private
# structures of that source (cblite/README.md). The package's files are checked against
# the pinned SHA-256s, and the amalgamation against the pinned SQLite version, source ID
# and SQLCipher version. Does nothing when the amalgamation present is the pinned one, and
# replaces one of another version.
#
# The pinned version is 4.x, which bookworm does not carry: when the configured apt sources
# lack it, a deb-src entry for the next Debian release is added, using the mirror that the
# system's own apt configuration names. Files already in the work directory with the
# pinned checksums are used without asking apt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${CBLITE_DEPS_DIR:-$here/../../.build-deps}
out_c=$here/sqlite3.c
out_h=$here/include/sqlite3.h
pin_file=$here/cblite/pinned_sqlite.h

pinned() {
  local value
  value=$(sed -nE "s/^#define $1 \"?([^\"]*)\"?\$/\1/p" "$pin_file")
  [[ -n $value ]] || { echo "generate.sh: no $1 in $pin_file" >&2; exit 1; }
  echo "$value"
}
package_version=$(pinned CBLITE_PINNED_DEBIAN_SOURCE)
sqlite_version=$(pinned CBLITE_PINNED_SQLITE_VERSION_NUMBER)
source_id=$(pinned CBLITE_PINNED_SQLITE_SOURCE_ID)
cipher_version=$(pinned CBLITE_PINNED_SQLCIPHER_VERSION)
files=() sums=()
for name in DSC ORIG DEBIAN; do
  file=$(pinned "CBLITE_PINNED_$name"); sum=$(pinned "CBLITE_PINNED_${name}_SHA256")
  files+=("$file"); sums+=("$sum")
done

# What an amalgamation (its .c and .h) says it is: "<version number> <SQLCipher> <source ID>";
# a .c whose source ID is not the .h's shows both, so it never matches the pin.
describe() {
  local c=$1 h=$2 number cipher id_h id_c
  number=$(sed -nE 's/^#define SQLITE_VERSION_NUMBER +([0-9]+).*/\1/p' "$h" | head -1)
  cipher=$(sed -nE 's/^#define CIPHER_VERSION_NUMBER +([^ ]+).*/\1/p' "$c" | head -1)
  id_h=$(sed -nE 's/^#define SQLITE_SOURCE_ID +"(.*)"$/\1/p' "$h" | head -1)
  id_c=$(sed -nE 's/^#define SQLITE_SOURCE_ID +"(.*)"$/\1/p' "$c" | head -1)
  [[ $id_c == "$id_h" ]] || id_h="$id_h (sqlite3.c: $id_c)"
  echo "${number:-?} ${cipher:-?} ${id_h:-?}"
}
wanted="$sqlite_version $cipher_version $source_id"

if [[ -s $out_c && -s $out_h ]]; then
  found=$(describe "$out_c" "$out_h")
  [[ $found == "$wanted" ]] && exit 0
  echo "generate.sh: the amalgamation present is SQLite/SQLCipher/source ID '$found'," >&2
  echo "  not the pinned '$wanted': replacing it" >&2
fi
mkdir -p "$work" "$here/include"
work=$(cd "$work" && pwd)

verified() {  # file sha256: present with that checksum
  [[ -f $work/$1 ]] && echo "$2  $work/$1" | sha256sum --check --status
}
all_verified() {
  for i in "${!files[@]}"; do verified "${files[$i]}" "${sums[$i]}" || return 1; done
}

offered() {
  local versions
  versions=$(apt-cache showsrc sqlcipher 2>/dev/null | awk '/^Version:/ {print $2}' | sort -uV | paste -sd' ' - || true)
  echo "${versions:-none}"
}
source_listed() {
  apt-cache showsrc sqlcipher 2>/dev/null | awk '/^Version:/ {print $2}' | grep -qxF "$package_version"
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

not_available() {
  echo "generate.sh: Debian's sqlcipher $package_version source package (pinned in cblite/pinned_sqlite.h)" >&2
  echo "  is not in apt's sources ($1)." >&2
  echo "  Put ${files[*]}" >&2
  echo "  in $work (e.g. from https://snapshot.debian.org/package/sqlcipher/$package_version/) and run again." >&2
  exit 1
}

if ! all_verified; then
  if ! source_listed; then
    [[ $(id -u) -eq 0 ]] || not_available "offered: $(offered); as root, generate.sh adds Debian trixie's"
    mirror=$(system_mirror)
    cat > /etc/apt/sources.list.d/cblite-sqlcipher-src.sources <<SRC
Types: deb-src
URIs: $mirror
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt-get update -qq
    source_listed || not_available "offered, with Debian trixie's: $(offered)"
  fi
  (cd "$work" && apt-get source --download-only -qq "sqlcipher=$package_version") >"$work/download.log" 2>&1 \
    || { echo "generate.sh: downloading sqlcipher $package_version's source failed, see $work/download.log" >&2; exit 1; }
  for i in "${!files[@]}"; do
    if ! verified "${files[$i]}" "${sums[$i]}"; then
      actual=$( [[ -f $work/${files[$i]} ]] && sha256sum "$work/${files[$i]}" | cut -d' ' -f1 || echo "missing")
      echo "generate.sh: ${files[$i]}'s SHA-256 is $actual, not the pinned ${sums[$i]}:" >&2
      echo "  not the source cblite's C was checked against (cblite/pinned_sqlite.h); refusing to build from it" >&2
      exit 1
    fi
  done
fi

# Unpacked from the verified files (again whenever the directory is not from them).
upstream=${package_version%-*}
src=$work/sqlcipher-$upstream
stamp="${sums[*]}"
if [[ ! -f $src/configure || $(cat "$src/.cblite-pin" 2>/dev/null) != "$stamp" ]]; then
  rm -rf "$src"
  (cd "$work" && dpkg-source -x "${files[0]}" "sqlcipher-$upstream") >"$work/unpack.log" 2>&1 \
    || { echo "generate.sh: unpacking sqlcipher $package_version failed, see $work/unpack.log" >&2; exit 1; }
  echo "$stamp" > "$src/.cblite-pin"
fi

cd "$src"
if [[ ! -s sqlite3.c ]]; then
  ./configure --enable-tempstore=yes CFLAGS="-DSQLITE_HAS_CODEC -DSQLITE_TEMP_STORE=2" \
      LDFLAGS="-lcrypto" >"$work/configure.log" 2>&1 \
    || { echo "generate.sh: configure failed, see $work/configure.log" >&2; exit 1; }
  make sqlite3.c >"$work/make.log" 2>&1 \
    || { echo "generate.sh: amalgamation failed, see $work/make.log" >&2; exit 1; }
fi
made=$(describe sqlite3.c sqlite3.h)
if [[ $made != "$wanted" ]]; then
  echo "generate.sh: the amalgamation made from sqlcipher $package_version is '$made', not the pinned '$wanted'" >&2
  exit 1
fi
cp sqlite3.c "$out_c.tmp" && mv "$out_c.tmp" "$out_c"
cp sqlite3.h "$out_h.tmp" && mv "$out_h.tmp" "$out_h"
echo "generate.sh: SQLCipher $cipher_version (SQLite $sqlite_version, source ID $source_id)"
echo "  from Debian sqlcipher $package_version, SHA-256 verified"
