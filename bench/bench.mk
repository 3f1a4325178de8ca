# cblite benchmark (bench/) — included at the end of the main Makefile.
#   make bench            the workload of /work/shared/bench/WORKLOAD.md against libcblite and a
#                         raw-SQLite baseline; BENCH_N=100000 docs, BENCH_RUNS=3 runs, medians.
#                         Writes bench/results/latest.json. Never fails on numbers.
#                         Then the listener phase (bench_listener.c), the replication phase
#                         (bench_replication.c: push and pull over loopback, BENCH_REPLICATION_N)
#                         and the library's size by dependency (size_report.sh).
#                         Then concurrency (1, 2, 4 readers alone, beside a paced writer, beside a flat-out writer) and the cold open
#                         (bench_concurrency.c). BENCH_SCALE=1 adds bench-scale.
#   make bench-scale      the workload at N = 10,000, 100,000 and 1,000,000 (BENCH_SCALE_NS):
#                         per-item cost of each phase at each N (bench/scale_report.py).
#   make bench-baseline   the baseline side alone (needs no libcblite).
#   make profile          callgrind on the cblite side (PROFILE_N=5000, one run): top functions
#                         of the whole run, then of each phase.
#   make bench-clean      removes build/bench.
# To use an existing build/lib/libcblite.so.1 without letting `lib` rebuild it:
#   make bench -o lib -o build/lib/libcblite.so.$(VERSION)
BENCH_OUT      := $(BUILD)/bench
BENCH_N        ?= 100000
BENCH_RUNS     ?= 3
BENCH_LISTENER_N ?= 20000
BENCH_REPLICATION_N ?= 100000
PROFILE_N      ?= 5000
BENCH_CONCURRENCY_N ?= 100000
# BENCH_SCALE=1: `make bench` also runs the workload at each N of BENCH_SCALE_NS (bench-scale)
BENCH_SCALE    ?= 0
BENCH_SCALE_NS ?= 10000 100000 1000000
BENCH_CFLAGS   := -std=c99 -Wall -Wextra -Werror -O2 -g -Iinclude -Ibench
BENCH_RESULTS  := bench/results/latest.json
BENCH_COMMIT    = $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)$(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo -dirty)

# The baseline compiles the very SQLCipher amalgamation the library compiles, with the
# defines of Package.swift's `sqlcipherDefines` (read from Package.swift so they cannot
# drift), with the toolchain's clang as SwiftPM does (cc when there is none), no key.
BENCH_SQLITE_DEFINES = $(shell sed -n '/^let sqlcipherDefines/,/^]/p' Package.swift 2>/dev/null | \
    sed -nE -e 's/^[[:space:]]*\.define\("([A-Za-z0-9_]+)", *to: *"([^"]*)"\).*/-D\1=\2/p' \
                -e 's/^[[:space:]]*\.define\("([A-Za-z0-9_]+)"\).*/-D\1/p')
BENCH_SQLITE_UNSAFE  = $(shell sed -n '/^let sqlcipherDefines/,/^]/p' Package.swift 2>/dev/null | \
    sed -nE 's/.*unsafeFlags\(\[(.*)\]\).*/\1/p' | tr -d '",')
BENCH_SWIFT_CLANG    = $(wildcard $(dir $(shell command -v $(SWIFT) 2>/dev/null))clang)
BENCH_SQLITE_CC      ?= $(if $(BENCH_SWIFT_CLANG),$(BENCH_SWIFT_CLANG),$(CC))
BENCH_SQLITE_CFLAGS  = $(BENCH_SQLITE_DEFINES) \
    $(if $(BENCH_SWIFT_CLANG),$(BENCH_SQLITE_UNSAFE),$(filter-out -Wno-everything,$(BENCH_SQLITE_UNSAFE)) -w) \
    -fPIC -ISources/CSQLCipher/include

BENCH_COMMON_SRC := bench/bench_common.c bench/bench_common.h

.PHONY: bench bench-baseline bench-bins bench-scale profile bench-clean

$(BENCH_OUT)/sqlite3.o: $(AMALGAMATION) Package.swift
	@mkdir -p $(BENCH_OUT)
	@test -n "$(BENCH_SQLITE_DEFINES)" || { echo "bench: no sqlcipherDefines found in Package.swift"; exit 1; }
	@echo "bench: compiling the SQLCipher amalgamation with $(BENCH_SQLITE_CC) $(BENCH_SQLITE_DEFINES) $(BENCH_SQLITE_UNSAFE)"
	$(BENCH_SQLITE_CC) $(BENCH_SQLITE_CFLAGS) -c -o $@.tmp $(AMALGAMATION) && mv $@.tmp $@

$(BENCH_OUT)/bench_sqlite: bench/bench_sqlite.c $(BENCH_COMMON_SRC) $(BENCH_OUT)/sqlite3.o
	@mkdir -p $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -ISources/CSQLCipher/include -o $@ bench/bench_sqlite.c bench/bench_common.c \
	  $(BENCH_OUT)/sqlite3.o -lcrypto -lm -lpthread

# Linked as users link it: the header and the built .so, nothing else. RUNPATH (new dtags)
# so that LD_LIBRARY_PATH can substitute the unstripped library for `make profile`.
$(BENCH_OUT)/bench_cblite: bench/bench_cblite.c $(BENCH_COMMON_SRC) include/cblite.h $(BUILD)/lib/$(SO_REAL)
	@mkdir -p $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -o $@ bench/bench_cblite.c bench/bench_common.c \
	  -L$(BUILD)/lib -lcblite -lpthread -Wl,--enable-new-dtags -Wl,-rpath,$(CURDIR)/$(BUILD)/lib

$(BENCH_OUT)/bench: bench/bench_main.c $(BENCH_COMMON_SRC)
	@mkdir -p $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -o $@ bench/bench_main.c bench/bench_common.c -lm

$(BENCH_OUT)/bench_listener: bench/bench_listener.c $(BENCH_COMMON_SRC) include/cblite.h $(BUILD)/lib/$(SO_REAL)
	@mkdir -p $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -o $@ bench/bench_listener.c bench/bench_common.c \
	  -L$(BUILD)/lib -lcblite -lpthread -Wl,--enable-new-dtags -Wl,-rpath,$(CURDIR)/$(BUILD)/lib

$(BENCH_OUT)/bench_replication: bench/bench_replication.c $(BENCH_COMMON_SRC) include/cblite.h $(BUILD)/lib/$(SO_REAL)
	@mkdir -p $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -o $@ bench/bench_replication.c bench/bench_common.c \
	  -L$(BUILD)/lib -lcblite -lpthread -Wl,--enable-new-dtags -Wl,-rpath,$(CURDIR)/$(BUILD)/lib

# With the baseline's SQLite linked in beside libcblite (whose own SQLite is not exported).
$(BENCH_OUT)/bench_concurrency: bench/bench_concurrency.c $(BENCH_COMMON_SRC) include/cblite.h $(BUILD)/lib/$(SO_REAL) $(BENCH_OUT)/sqlite3.o
	@mkdir -p $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -ISources/CSQLCipher/include -o $@ bench/bench_concurrency.c bench/bench_common.c \
	  $(BENCH_OUT)/sqlite3.o -L$(BUILD)/lib -lcblite -lcrypto -lm -lpthread -Wl,--enable-new-dtags -Wl,-rpath,$(CURDIR)/$(BUILD)/lib

bench-bins: $(BENCH_OUT)/bench $(BENCH_OUT)/bench_sqlite $(BENCH_OUT)/bench_cblite $(BENCH_OUT)/bench_listener \
            $(BENCH_OUT)/bench_replication $(BENCH_OUT)/bench_concurrency

bench: lib $(AMALGAMATION) bench-bins
	@mkdir -p bench/results $(BENCH_OUT)
	@strip --strip-all -o $(BENCH_OUT)/libcblite.stripped.so $(BUILD)/lib/$(SO_REAL)
	$(BENCH_OUT)/bench --n $(BENCH_N) --runs $(BENCH_RUNS) \
	  --cblite $(BENCH_OUT)/bench_cblite --baseline $(BENCH_OUT)/bench_sqlite \
	  --data $(BENCH_OUT)/data --json $(BENCH_RESULTS) --commit "$(BENCH_COMMIT)" \
	  --lib $(BUILD)/lib/$(SO_NAME) --lib-stripped $(BENCH_OUT)/libcblite.stripped.so
	@echo "bench: the listener (issues 10, 33) — _bulk_docs and GET by ID against the C API, then 1, 8, 64 concurrent clients, $(BENCH_LISTENER_N) docs, $(BENCH_RUNS) runs"
	$(BENCH_OUT)/bench_listener --n $(BENCH_LISTENER_N) --runs $(BENCH_RUNS) --dir $(BENCH_OUT)/listener-data
	@echo "bench: replication (issue 11) — push to and pull from a listener over loopback, $(BENCH_REPLICATION_N) docs, $(BENCH_RUNS) runs"
	$(BENCH_OUT)/bench_replication --n $(BENCH_REPLICATION_N) --runs $(BENCH_RUNS) --dir $(BENCH_OUT)/replication-data
	@echo "bench: concurrency and cold open (issue 14) — 1, 2, 4 readers beside one writer, $(BENCH_CONCURRENCY_N) docs, $(BENCH_RUNS) runs"
	$(BENCH_OUT)/bench_concurrency --n $(BENCH_CONCURRENCY_N) --runs $(BENCH_RUNS) --dir $(BENCH_OUT)/concurrency-data \
	  --json bench/results/concurrency.json
	@bench/size_report.sh .build/release/libcblite.so $(BENCH_OUT)/libcblite.stripped.so
	@if [ "$(BENCH_SCALE)" = 1 ]; then $(MAKE) --no-print-directory bench-scale -o lib -o $(BUILD)/lib/$(SO_REAL); fi

# The same workload at each N of BENCH_SCALE_NS (medians of BENCH_RUNS): cost per item of
# each phase at each N, largest/smallest, ratios to the baseline, size per document
# (bench/scale_report.py -> bench/results/scale.json); then the concurrency figures and the
# cold open at the largest N. The 1,000,000 run takes several minutes.
bench-scale: lib $(AMALGAMATION) bench-bins
	@mkdir -p bench/results $(BENCH_OUT)
	@for n in $(BENCH_SCALE_NS); do \
	  echo "bench-scale: N=$$n, $(BENCH_RUNS) runs"; \
	  $(BENCH_OUT)/bench --n $$n --runs $(BENCH_RUNS) \
	    --cblite $(BENCH_OUT)/bench_cblite --baseline $(BENCH_OUT)/bench_sqlite \
	    --data $(BENCH_OUT)/data --json bench/results/scale-$$n.json --commit "$(BENCH_COMMIT)" >$(BENCH_OUT)/scale-$$n.txt || \
	    { cat $(BENCH_OUT)/scale-$$n.txt; exit 1; }; \
	done
	$(PYTHON) bench/scale_report.py bench/results/scale.json $(foreach n,$(BENCH_SCALE_NS),bench/results/scale-$(n).json)
	$(BENCH_OUT)/bench_concurrency --n $(lastword $(BENCH_SCALE_NS)) --runs 1 --dir $(BENCH_OUT)/concurrency-data \
	  --json bench/results/scale-concurrency.json

bench-baseline: $(AMALGAMATION) $(BENCH_OUT)/bench $(BENCH_OUT)/bench_sqlite
	@mkdir -p bench/results $(BENCH_OUT)
	$(BENCH_OUT)/bench --n $(BENCH_N) --runs $(BENCH_RUNS) \
	  --baseline $(BENCH_OUT)/bench_sqlite --data $(BENCH_OUT)/data \
	  --json bench/results/baseline.json --commit "$(BENCH_COMMIT)"

# Callgrind on the cblite side (bench/profile.sh): one run with PROFILE_N docs; the top
# functions of the whole run (self and inclusive cost), then of each phase (a second run
# that dumps once per phase); perf stat too when the machine has hardware counters.
# The profiled library is the unstripped build of the same sources
# (.build/release/libcblite.so) when it exists, so that Swift functions have names;
# otherwise the shipped, stripped one (Swift internals then show as ???). Its DWARF is
# dropped (valgrind 3.19 cannot read clang's DWARF 5); the symbol table is enough.
PROFILE_OUT := $(BENCH_OUT)/profile
profile: lib $(AMALGAMATION) $(BENCH_OUT)/bench_cblite
	@rm -rf $(PROFILE_OUT) && mkdir -p $(PROFILE_OUT)/lib
	@if [ -f .build/release/libcblite.so ] && ! ldd .build/release/libcblite.so 2>&1 | grep -q 'not found'; then \
	  strip --strip-debug -o $(PROFILE_OUT)/lib/$(SO_NAME) .build/release/libcblite.so; \
	  echo "profile: library .build/release/libcblite.so (symbols kept, DWARF dropped for valgrind; $$(stat -c %y .build/release/libcblite.so | cut -c1-19))"; \
	else cp $(BUILD)/lib/$(SO_REAL) $(PROFILE_OUT)/lib/$(SO_NAME); \
	  echo "profile: library $(BUILD)/lib/$(SO_REAL) (stripped: Swift internals show as ???)"; fi
	bench/profile.sh $(BENCH_OUT)/bench_cblite $(PROFILE_OUT) $(PROFILE_N) $(CURDIR)/$(PROFILE_OUT)/lib

bench-clean:
	rm -rf $(BENCH_OUT)

# The Mango phase (issue 29, bench/bench_mango.c): json index build beside a view build,
# equality and range finds through the index and an unindexed scan, against raw SQLite's
# json_extract with and without an expression index, in the same run.
BENCH_MANGO_N ?= 100000
$(BENCH_OUT)/bench_mango: bench/bench_mango.c $(BENCH_COMMON_SRC) include/cblite.h $(BUILD)/lib/$(SO_REAL) $(BENCH_OUT)/sqlite3.o
	@mkdir -p $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -ISources/CSQLCipher/include -o $@ bench/bench_mango.c bench/bench_common.c $(BENCH_OUT)/sqlite3.o \
	  -L$(BUILD)/lib -lcblite -lcrypto -lm -lpthread -Wl,--enable-new-dtags -Wl,-rpath,$(CURDIR)/$(BUILD)/lib
bench-mango: lib $(AMALGAMATION) $(BENCH_OUT)/bench_mango
	$(BENCH_OUT)/bench_mango --n $(BENCH_MANGO_N) --runs $(BENCH_RUNS) --dir $(BENCH_OUT)/mango-data
bench: bench-mango
.PHONY: bench-mango

# The JavaScript view phase (issue 28, bench/bench_jsview.c): the workload's view built and
# queried as a design document's JavaScript view and as a native C map callback, in the
# same run; ratios js / native (targets: build within 3x, queries equal).
BENCH_JSVIEW_N ?= 100000
$(BENCH_OUT)/bench_jsview: bench/bench_jsview.c $(BENCH_COMMON_SRC) include/cblite.h $(BUILD)/lib/$(SO_REAL)
	@mkdir -p $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -o $@ bench/bench_jsview.c bench/bench_common.c \
	  -L$(BUILD)/lib -lcblite -lm -lpthread -Wl,--enable-new-dtags -Wl,-rpath,$(CURDIR)/$(BUILD)/lib
bench-jsview: lib $(BENCH_OUT)/bench_jsview
	$(BENCH_OUT)/bench_jsview --n $(BENCH_JSVIEW_N) --runs $(BENCH_RUNS) --dir $(BENCH_OUT)/jsview-data
bench: bench-jsview
.PHONY: bench-jsview

# The full-text phase (issue 30, bench/bench_fts.c): a full-text index built on Debian's
# fortunes (installed here when missing, as root) and ranked searches with snippets,
# against raw SQLite FTS5 over the same rows, in the same run.
BENCH_FTS_REPEAT ?= 4
FORTUNES_DIR     := /usr/share/games/fortunes
$(BENCH_OUT)/bench_fts: bench/bench_fts.c $(BENCH_COMMON_SRC) include/cblite.h $(BUILD)/lib/$(SO_REAL) $(BENCH_OUT)/sqlite3.o
	@mkdir -p $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -ISources/CSQLCipher/include -o $@ bench/bench_fts.c bench/bench_common.c $(BENCH_OUT)/sqlite3.o \
	  -L$(BUILD)/lib -lcblite -lcrypto -lm -lpthread -Wl,--enable-new-dtags -Wl,-rpath,$(CURDIR)/$(BUILD)/lib
bench-fts-corpus:
	@test -d $(FORTUNES_DIR) || { test "$$(id -u)" = 0 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q fortunes >/dev/null; } || \
	  { echo "bench-fts: needs Debian's fortunes package (apt-get install fortunes, as root)"; exit 1; }
bench-fts: lib $(AMALGAMATION) $(BENCH_OUT)/bench_fts bench-fts-corpus
	$(BENCH_OUT)/bench_fts --runs $(BENCH_RUNS) --repeat $(BENCH_FTS_REPEAT) --dir $(BENCH_OUT)/fts-data --corpus $(FORTUNES_DIR)
bench: bench-fts
.PHONY: bench-fts bench-fts-corpus
