#!/usr/bin/env bash
# Copies Duktape's one-file source (duktape.c, duktape.h, duk_config.h) from Debian's
# `duktape-dev` package into duktape/ (generated, gitignored), to be compiled into
# libcblite.so: a shared libduktape would be a new runtime dependency.
#
# Exactly the pinned files (SHA-256 below, Debian duktape-dev 2.7.0-2). duk_config.h gets
# these changes, each checked to apply:
# - the execution-timeout hook (DUK_USE_EXEC_TIMEOUT_CHECK, and the interrupt counter it
#   needs) calls cblite_js_timed_out (cblite/js_engine.c): the time limit of a call;
# - DUK_EXTERNAL's visibility("default") becomes "hidden": no duk_ symbol leaves the
#   library (a host's own Duktape and ours never interpose);
# - the native recursion limits are lowered so that hostile recursion through native
#   functions (Array.prototype.map of itself, JSON of deep values) fails with a RangeError
#   well within a 512 KiB thread stack (regular expressions' too).
# Does nothing when the files present are the ones it makes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${CBLITE_DUKTAPE_DIR:-/usr/share/duktape}
out=$here/duktape
declare -A pinned=(
  [duktape.c]=2fa5f54ae03b574b2e6cacfb412f3a02c7207b7833f75129a234326b48c17496
  [duktape.h]=6ba93aea92510096c43ddd7c7f9e36f698225c9cd2af788bf414adf7c777deb2
  [duk_config.h]=2644ecf3b1702232957ec98f69432b7cf4f4d3009d50fff0a24899bf449fe4a9
)
stamp_text="duktape 2.7.0-2 ${pinned[duktape.c]} ${pinned[duk_config.h]} $(sha256sum "$0" | cut -d' ' -f1)"
if [[ -s $out/duktape.c && -s $out/duktape.h && -s $out/duk_config.h && $(cat "$out/.stamp" 2>/dev/null) == "$stamp_text" ]]; then
  exit 0
fi
for f in "${!pinned[@]}"; do
  if [[ ! -f $src/$f ]]; then
    echo "generate.sh: $src/$f is missing: install Debian's duktape-dev (make deps-build does, as root)" >&2; exit 1
  fi
  if ! echo "${pinned[$f]}  $src/$f" | sha256sum --check --status; then
    echo "generate.sh: $src/$f's SHA-256 is $(sha256sum "$src/$f" | cut -d' ' -f1), not the pinned ${pinned[$f]}" >&2
    echo "  (duktape-dev 2.7.0-2): refusing to build from it" >&2; exit 1
  fi
done
mkdir -p "$out"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp "$src/duktape.c" "$src/duktape.h" "$tmp/"
config=$tmp/duk_config.h
cp "$src/duk_config.h" "$config"
edit() {  # file pattern replacement expected: exactly that many lines must change
  local file=$1 pattern=$2 replacement=$3 expected=$4 count
  count=$(grep -cE "$pattern" "$file" || true)
  if [[ $count != "$expected" ]]; then
    echo "generate.sh: $(basename "$file") has $count line(s) matching '$pattern', expected $expected" >&2; exit 1
  fi
  sed -i -E "s|$pattern|$replacement|" "$file"
}
edit "$config" '^#undef DUK_USE_INTERRUPT_COUNTER$' '#define DUK_USE_INTERRUPT_COUNTER' 1
edit "$config" '^#undef DUK_USE_EXEC_TIMEOUT_CHECK$' \
  '__attribute__ ((visibility("hidden"))) extern int cblite_js_timed_out(void *udata);\n#define DUK_USE_EXEC_TIMEOUT_CHECK(udata) cblite_js_timed_out(udata)' 1
edit "$config" 'visibility\("default"\)' 'visibility("hidden")' 6
edit "$config" '^#define DUK_USE_NATIVE_CALL_RECLIMIT 1000$' '#define DUK_USE_NATIVE_CALL_RECLIMIT 200' 1
edit "$config" '^#define DUK_USE_COMPILER_RECLIMIT 2500$' '#define DUK_USE_COMPILER_RECLIMIT 500' 1
edit "$config" '^#define DUK_USE_REGEXP_COMPILER_RECLIMIT 10000$' '#define DUK_USE_REGEXP_COMPILER_RECLIMIT 1000' 1
edit "$config" '^#define DUK_USE_REGEXP_EXECUTOR_RECLIMIT 10000$' '#define DUK_USE_REGEXP_EXECUTOR_RECLIMIT 1000' 1
# A regular expression's backtracking runs outside the executor's timeout hook: its step
# limit (1e9, many seconds) becomes 1e8 (about a second).
edit "$tmp/duktape.c" '^#define DUK_RE_EXECUTE_STEPS_LIMIT 1000000000L .*$' '#define DUK_RE_EXECUTE_STEPS_LIMIT 100000000L  /* 1e8: cblite, generate.sh */' 1
mv "$tmp/duktape.c" "$tmp/duktape.h" "$config" "$out/"
echo "$stamp_text" > "$out/.stamp"
echo "generate.sh: Duktape 2.7.0 from Debian duktape-dev 2.7.0-2, SHA-256 verified, into $out"
