#!/usr/bin/env bash
# bench/profile.sh — `make profile`: callgrind on one side of the benchmark (normally
# bench_cblite) with a small N and one run; prints the hottest functions of the whole run,
# then of each phase.
#   bench/profile.sh BENCH_BINARY OUT_DIR N [LIBRARY_DIR]
# LIBRARY_DIR (optional) is put first in LD_LIBRARY_PATH (an unstripped libcblite.so.1,
# so that Swift functions have names). Needs valgrind; perf is used when it has counters.
set -eu
bin=$1 out=$2 n=$3 libdir=${4:-}
top=${PROFILE_TOP:-25}
phase_top=${PROFILE_PHASE_TOP:-15}
command -v valgrind >/dev/null || { echo "profile: valgrind is not installed"; exit 1; }
mkdir -p "$out"
rm -rf "$out/data" "$out"/callgrind.* && mkdir -p "$out/data"
if [ -n "$libdir" ]; then export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi

if command -v swift-demangle >/dev/null 2>&1; then demangle() { swift-demangle --simplified; }
elif command -v swift >/dev/null 2>&1; then demangle() { swift demangle --simplified; }
else demangle() { cat; }; fi

# The function table of callgrind_annotate: the lines after the "file:function" header.
# Frames that were on the stack when a per-phase dump was taken show (nearly) the part's
# whole cost, or are "(below main)": lines at 99.5% or more are dropped.
table() {
    callgrind_annotate --inclusive="$1" --threshold=100 "$2" 2>/dev/null |
        awk '/file:function/ {on=1; getline; next} on && /^-+$/ {exit}
             on && NF { if (match($0, /\( *[0-9.]+%\)/)) { pct = substr($0, RSTART + 1, RLENGTH - 3) + 0; if (pct >= 99.5) next }
                        if (index($0, "(below main)")) next; print }' |
        demangle | cut -c1-230 | head -n "$3"
}

cg=(valgrind --tool=callgrind --dump-instr=no --collect-jumps=no)

echo "profile: whole run of $(basename "$bin"), N=$n, 1 run, under callgrind..."
"${cg[@]}" --callgrind-out-file="$out/callgrind.whole" "$bin" --n "$n" --dir "$out/data/whole" \
    >"$out/whole.txt" 2>"$out/valgrind-whole.log" || { tail -20 "$out/valgrind-whole.log"; exit 1; }
awk '$1=="phase" {printf "  %-12s %10.1f ms under callgrind (%s items)\n", $2, $3, $4}' "$out/whole.txt"
echo
echo "== top $top functions by self cost (instructions), whole run =="
table no "$out/callgrind.whole" "$top"
echo
echo "== top $top functions by inclusive cost, whole run =="
table yes "$out/callgrind.whole" "$top"

echo
echo "profile: per phase (second run, one callgrind dump per phase)..."
BENCH_CALLGRIND_DUMPS=1 "${cg[@]}" --callgrind-out-file="$out/callgrind.phase" "$bin" --n "$n" \
    --dir "$out/data/phases" >"$out/phases.txt" 2>"$out/valgrind-phases.log" ||
    { tail -20 "$out/valgrind-phases.log"; exit 1; }
for f in $(ls "$out"/callgrind.phase.* 2>/dev/null | sort -t. -k3 -n); do
    trig=$(sed -n 's/^desc: Trigger: Client Request: //p' "$f" | head -1)
    case "$trig" in phase-*) ;; *) continue ;; esac
    total=$(sed -n 's/^summary: //p' "$f" | head -1)
    echo
    echo "== ${trig#phase-} ($(printf "%'d" "$total" 2>/dev/null || echo "$total") instructions): top $phase_top functions by self cost =="
    table no "$f" "$phase_top"
done

perf_out=$( (perf stat -e instructions true) 2>&1 || true)
if command -v perf >/dev/null 2>&1 && ! grep -q 'not supported' <<<"$perf_out" && grep -q instructions <<<"$perf_out"; then
    echo
    echo "== perf stat, N=$n =="
    perf stat -e task-clock,instructions,cycles,cache-misses "$bin" --n "$n" --dir "$out/data/perf" >/dev/null || true
else
    echo
    echo "profile: perf has no hardware counters here (skipped)"
fi
rm -rf "$out/data"
echo
echo "profile: callgrind files in $out (callgrind_annotate FILE, or kcachegrind)"
