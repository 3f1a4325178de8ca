#!/usr/bin/env bash
# The library's size, and each large dependency's share of it (issue 10's size budget:
# the stripped libcblite.so stays <= 25 MB with the listener and TLS in it).
# Usage: size_report.sh UNSTRIPPED_SO STRIPPED_SO
# Shares are of the symbol bytes nm can attribute (code and data with sizes), grouped by
# Swift module (from the mangled name) or by C library prefix.
set -euo pipefail
unstripped=$1 stripped=$2
awk -v b="$(stat -c %s "$stripped")" 'BEGIN { printf "size: stripped libcblite.so %.1f MiB = %.1f MB (budget 25 MB)\n", b/1048576, b/1e6 }'
if [ ! -f "$unstripped" ]; then echo "size: no unstripped build at $unstripped for the per-dependency shares"; exit 0; fi
nm --size-sort -S "$unstripped" 2>/dev/null | awk '
  function hex(s,   i, c, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c }; return v }
  { size = hex($2); name = $4; group = "other (C++ runtime, libc glue, unattributed)"
    if (match(name, /^\$s[0-9]+/)) {
      n = substr(name, 3, RLENGTH - 2) + 0; group = "Swift " substr(name, RLENGTH + 1, n)
    } else if (name ~ /^(\$s|_\$s|\$S)/) { group = "Swift (other)" }
    else if (name ~ /CNIOBoringSSL|^BORINGSSL|^bssl/) group = "BoringSSL (NIOSSL)"
    else if (name ~ /^(sqlite3|sqlcipher|fts5|Fts5|sqlite)/) group = "SQLCipher"
    else if (name ~ /^(swift_|_swift|swift::|_ZN5swift|__swift)/) group = "Swift runtime"
    else if (name ~ /^(CNIO|c_nio)/) group = "SwiftNIO C shims"
    else if (name ~ /^(duk_|cblite_js)/) group = "Duktape (JavaScript)"
    total += size; by[group] += size }
  END { for (g in by) if (by[g] > 262144) printf "%10.2f MiB  %5.1f%%  %s\n", by[g]/1048576, 100*by[g]/total, g
        printf "%10.2f MiB  total attributed\n", total/1048576 }' | sort -rn | head -25
