# cblite reliability tests (Tests/reliability/) — included by the main Makefile
# (`-include Tests/reliability/reliability.mk`), or run standalone:
#   make -f Tests/reliability/reliability.mk <target>
#
#   make crash-test        SIGKILL a writer child at random moments and verify every
#                          acknowledged write (CRASH_KILLS=500, CRASH_SEED=1)
#   make stress            threads x handles x processes on shared counters, listeners,
#                          compaction, re-entrant callbacks (STRESS_THREADS=8, STRESS_OPS=2000)
#   make bad-input         table-driven hostile-input test of every function
#   make replication-crash-test  SIGKILL the listener and/or the replicator mid-sync, then
#                          check that A, B and C converge exactly (REPL_CRASH_KILLS=40)
#   make test-reliability  the small versions of the four above (run by `make test`)
#   make fuzz              libFuzzer over the C ABI, FUZZ_SECONDS=60 (needs clang -fsanitize=fuzzer)
#   make test-sanitize     the C test program and the stress/bad-input tests under
#                          AddressSanitizer and ThreadSanitizer (Swift debug builds of the
#                          library in .build-asan / .build-tsan) and valgrind memcheck
#
# Uses build/lib/libcblite.so.1 as built by `make lib`; never rebuilds it itself
# (set REL_LIB_DEP=lib when included from the main Makefile to build it first).
REL_MK       := $(lastword $(MAKEFILE_LIST))
SHELL        := /bin/bash
BUILD        ?= build
CC           ?= cc
REL_DIR      := Tests/reliability
REL_OUT      := $(BUILD)/reliability
REL_LIB      := $(BUILD)/lib/libcblite.so.1
REL_CFLAGS   := -std=c99 -Wall -Wextra -Werror -g -O1 -Iinclude -I$(REL_DIR)
REL_LDFLAGS  := -L$(BUILD)/lib -lcblite -lpthread -Wl,-rpath,$(CURDIR)/$(BUILD)/lib
REL_HDRS     := include/cblite.h $(REL_DIR)/rel_common.h
REL_LIB_DEP  ?=
export REL_TMPDIR ?= $(CURDIR)/$(REL_OUT)/tmp

CRASH_KILLS  ?= 500
CRASH_SEED   ?= 1
CRASH_SMALL_KILLS ?= 150
STRESS_THREADS ?= 8
STRESS_OPS   ?= 2000
STRESS_SMALL_OPS ?= 400
REPL_CRASH_KILLS ?= 40
REPL_CRASH_SEED ?= 1
REPL_CRASH_DOCS ?= 1500
REPL_CRASH_SMALL_KILLS ?= 16
REPL_CRASH_SMALL_DOCS ?= 1000
FUZZ_SECONDS ?= 60

SWIFT_CLANG  ?= /opt/swift/usr/bin/clang
SWIFT_RTLIB  ?= /opt/swift/usr/lib/swift/linux
SWIFT        ?= swift

.PHONY: crash-test stress bad-input replication-crash-test test-reliability fuzz fuzz-build test-sanitize test-sanitize-short \
        test-asan test-tsan asan-run tsan-run test-valgrind reliability-bins reliability-clean

reliability-bins: $(REL_OUT)/crash_test $(REL_OUT)/stress_test $(REL_OUT)/bad_input_test \
                  $(REL_OUT)/replication_crash_test

$(REL_OUT)/crash_test: $(REL_DIR)/crash_test.c $(REL_HDRS) $(REL_LIB_DEP)
	@mkdir -p $(REL_OUT)
	$(CC) $(REL_CFLAGS) -o $@ $< $(REL_LDFLAGS) -lsqlite3

$(REL_OUT)/stress_test: $(REL_DIR)/stress_test.c $(REL_HDRS) $(REL_LIB_DEP)
	@mkdir -p $(REL_OUT)
	$(CC) $(REL_CFLAGS) -o $@ $< $(REL_LDFLAGS)

$(REL_OUT)/bad_input_test: $(REL_DIR)/bad_input_test.c $(REL_HDRS) $(REL_LIB_DEP)
	@mkdir -p $(REL_OUT)
	$(CC) $(REL_CFLAGS) -o $@ $< $(REL_LDFLAGS)

$(REL_OUT)/replication_crash_test: $(REL_DIR)/replication_crash_test.c $(REL_HDRS) $(REL_LIB_DEP)
	@mkdir -p $(REL_OUT)
	$(CC) $(REL_CFLAGS) -o $@ $< $(REL_LDFLAGS)

crash-test: $(REL_OUT)/crash_test
	$(REL_OUT)/crash_test --kills $(CRASH_KILLS) --seed $(CRASH_SEED)

stress: $(REL_OUT)/stress_test
	$(REL_OUT)/stress_test --threads $(STRESS_THREADS) --ops $(STRESS_OPS) --handles 4 --procs 3 --proc-ops 2000

bad-input: $(REL_OUT)/bad_input_test
	$(REL_OUT)/bad_input_test

replication-crash-test: $(REL_OUT)/replication_crash_test
	$(REL_OUT)/replication_crash_test --kills $(REPL_CRASH_KILLS) --seed $(REPL_CRASH_SEED) --docs $(REPL_CRASH_DOCS)

# All four run even when one fails; the target fails at the end.
test-reliability: reliability-bins
	@rc=0; \
	echo "$(REL_OUT)/bad_input_test"; $(REL_OUT)/bad_input_test || rc=1; \
	echo "$(REL_OUT)/crash_test --kills $(CRASH_SMALL_KILLS) --seed $(CRASH_SEED)"; \
	$(REL_OUT)/crash_test --kills $(CRASH_SMALL_KILLS) --seed $(CRASH_SEED) || rc=1; \
	echo "$(REL_OUT)/stress_test --threads 6 --ops $(STRESS_SMALL_OPS)"; \
	$(REL_OUT)/stress_test --threads 6 --ops $(STRESS_SMALL_OPS) || rc=1; \
	echo "$(REL_OUT)/replication_crash_test --kills $(REPL_CRASH_SMALL_KILLS) --seed $(REPL_CRASH_SEED) --docs $(REPL_CRASH_SMALL_DOCS) --watchdog 240"; \
	$(REL_OUT)/replication_crash_test --kills $(REPL_CRASH_SMALL_KILLS) --seed $(REPL_CRASH_SEED) --docs $(REPL_CRASH_SMALL_DOCS) --watchdog 240 || rc=1; \
	if [ $$rc -ne 0 ]; then echo "test-reliability: FAILED"; exit 1; fi; echo "test-reliability: passed"

# ---- sanitizers ----------------------------------------------------------------------
# Debug builds of the library with -sanitize=address / -sanitize=thread, each in its own
# scratch path (never .build); the C programs are compiled with the toolchain's clang so
# the sanitizer runtimes match; the debug .so loads the Swift runtime from SWIFT_RTLIB.
SAN_SWIFT_SOURCES := $(shell find Sources -name '*.swift' -o -name '*.c' -o -name '*.h' 2>/dev/null) Package.swift include/cblite.h
SAN_RUN_ENV  = LD_LIBRARY_PATH=$(SWIFT_RTLIB) REL_TMPDIR=$(REL_TMPDIR) CBLITE_SANITIZED=1
SAN_CFLAGS   = -std=c99 -Wall -Wextra -Werror -g -O1 -fno-omit-frame-pointer -fuse-ld=lld -Iinclude -I$(REL_DIR)
TSAN_SUPP    = $(REL_DIR)/tsan.supp
TSAN_SUPP_ALL = $(TSAN_SUPP)
VALGRIND     ?= valgrind
VG_FLAGS     ?= --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=1 -q --fair-sched=yes

# $(1) = asan|tsan, $(2) = address|thread
define SAN_VARIANT
$(REL_OUT)/$(1)/lib/libcblite.so: $(SAN_SWIFT_SOURCES)
	@mkdir -p $(REL_OUT)/$(1)/lib
	@if [ ! -d .build-$(1)/checkouts ] && [ -d .build/checkouts ]; then \
	  mkdir -p .build-$(1) && cp -r .build/checkouts .build/repositories .build/workspace-state.json .build-$(1)/; fi
	@echo "sanitize: swift build --sanitize=$(2) in .build-$(1) (several minutes the first time)"
	@if $(SWIFT) build -c debug --scratch-path .build-$(1) --sanitize=$(2) --product cblite > $(REL_OUT)/$(1)/build.log 2>&1; then \
	  ln -sf $(CURDIR)/.build-$(1)/debug/libcblite.so $$@; \
	else echo "sanitize: the $(2)-sanitized library did not build (see $(REL_OUT)/$(1)/build.log)"; tail -5 $(REL_OUT)/$(1)/build.log; rm -f $$@; fi

$(REL_OUT)/$(1)/%: $(REL_DIR)/%.c $(REL_HDRS) $(REL_OUT)/$(1)/lib/libcblite.so
	$(SWIFT_CLANG) $(SAN_CFLAGS) -fsanitize=$(2) -o $$@ $$< -L$(REL_OUT)/$(1)/lib -lcblite \
	  -L$(SWIFT_RTLIB) -ldispatch -lBlocksRuntime -lpthread -Wl,-rpath,$(CURDIR)/$(REL_OUT)/$(1)/lib -Wl,-rpath,$(SWIFT_RTLIB)
$(REL_OUT)/$(1)/test_%: Tests/c/test_%.c Tests/c/check.h include/cblite.h $(REL_OUT)/$(1)/lib/libcblite.so
	$(SWIFT_CLANG) $(SAN_CFLAGS) -fsanitize=$(2) -o $$@ $$< -L$(REL_OUT)/$(1)/lib -lcblite \
	  -L$(SWIFT_RTLIB) -ldispatch -lBlocksRuntime -lpthread -Wl,-rpath,$(CURDIR)/$(REL_OUT)/$(1)/lib -Wl,-rpath,$(SWIFT_RTLIB)
endef
$(eval $(call SAN_VARIANT,asan,address))
$(eval $(call SAN_VARIANT,tsan,thread))

# Runs a list of programs, keeps going, fails at the end if any failed.
#   $(1) = label, $(2) = environment, $(3) = commands separated by ';;'
# With a 64 MiB main stack: sanitizers inflate every frame (ASan's redzones), and a
# document nested to CBL_MAX_JSON_DEPTH recurses once per level (8 MiB ran out under ASan).
define SAN_RUN
	@fails=0; IFS=$$'\n'; for cmd in $$(echo "$(3)" | sed 's/;;/\n/g'); do \
	  cmd=$$(echo "$$cmd" | sed 's/^ *//'); [ -z "$$cmd" ] && continue; \
	  echo "== $(1): $$cmd"; \
	  if ! env $(2) bash -c "ulimit -s 65536 2>/dev/null; $$cmd" > $(REL_OUT)/$(1).out 2>&1; then fails=$$((fails+1)); echo "FAILED ($(1)): $$cmd"; \
	    grep -E 'ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|SUMMARY|definitely lost|FAILED' $(REL_OUT)/$(1).out | head -20; \
	    cp $(REL_OUT)/$(1).out $(REL_OUT)/$(1).failed-$$fails.log; echo "   full log: $(REL_OUT)/$(1).failed-$$fails.log"; \
	  else grep -E '[0-9]+ passed, [0-9]+ failed' $(REL_OUT)/$(1).out | tail -1; \
	    grep -E 'definitely lost|ERROR SUMMARY: [1-9]|WARNING: ThreadSanitizer|ERROR: (Address|Leak)Sanitizer' $(REL_OUT)/$(1).out | head -3; fi; \
	done; \
	if [ $$fails -ne 0 ]; then echo "$(1): $$fails program(s) with findings"; exit 1; fi; echo "$(1): clean"
endef

test-asan: $(REL_OUT)/asan/lib/libcblite.so
	@if [ ! -e $(REL_OUT)/asan/lib/libcblite.so ]; then echo "test-asan: SKIPPED (no ASan build of the library, see above)"; \
	else $(MAKE) -f $(REL_MK) --no-print-directory asan-run; fi
asan-run: $(REL_OUT)/asan/test_cblite $(REL_OUT)/asan/test_views $(REL_OUT)/asan/test_attachments $(REL_OUT)/asan/bad_input_test $(REL_OUT)/asan/stress_test \
          $(REL_OUT)/asan/test_sync $(REL_OUT)/asan/test_server $(REL_OUT)/asan/test_replicator $(REL_OUT)/asan/test_diagnosis
	$(call SAN_RUN,asan,$(SAN_RUN_ENV) ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=66,$(REL_OUT)/asan/test_cblite ;; $(REL_OUT)/asan/test_views ;; $(REL_OUT)/asan/test_attachments ;; $(REL_OUT)/asan/bad_input_test ;; $(REL_OUT)/asan/stress_test --threads 6 --ops 300 ;; $(REL_OUT)/asan/test_sync ;; $(REL_OUT)/asan/test_server ;; $(REL_OUT)/asan/test_replicator ;; $(REL_OUT)/asan/test_diagnosis)

test-tsan: $(REL_OUT)/tsan/lib/libcblite.so
	@if [ ! -e $(REL_OUT)/tsan/lib/libcblite.so ]; then echo "test-tsan: SKIPPED (no TSan build of the library, see above)"; \
	else $(MAKE) -f $(REL_MK) --no-print-directory tsan-run; fi
tsan-run: $(REL_OUT)/tsan/test_cblite $(REL_OUT)/tsan/test_views $(REL_OUT)/tsan/test_attachments $(REL_OUT)/tsan/bad_input_test $(REL_OUT)/tsan/stress_test \
          $(REL_OUT)/tsan/test_sync $(REL_OUT)/tsan/test_server $(REL_OUT)/tsan/test_replicator $(REL_OUT)/tsan/test_diagnosis $(TSAN_SUPP_ALL)
	$(call SAN_RUN,tsan,$(SAN_RUN_ENV) TSAN_OPTIONS=suppressions=$(CURDIR)/$(TSAN_SUPP_ALL):halt_on_error=0:exitcode=66,$(REL_OUT)/tsan/test_cblite ;; $(REL_OUT)/tsan/test_views ;; $(REL_OUT)/tsan/test_attachments ;; $(REL_OUT)/tsan/bad_input_test ;; $(REL_OUT)/tsan/stress_test --threads 4 --ops 150 ;; $(REL_OUT)/tsan/test_sync ;; $(REL_OUT)/tsan/test_server ;; $(REL_OUT)/tsan/test_replicator ;; $(REL_OUT)/tsan/test_diagnosis)

$(REL_OUT)/test_%: Tests/c/test_%.c Tests/c/check.h include/cblite.h $(REL_LIB_DEP)
	@mkdir -p $(REL_OUT)
	$(CC) -std=c99 -Wall -Wextra -Werror -g -Iinclude -o $@ $< $(REL_LDFLAGS)

# valgrind memcheck against the release .so: zero definite leaks (the Swift runtime's
# one-time allocations are "still reachable"/"possibly lost", not definite). Slow: the
# C test program takes ~4-5 minutes under valgrind on 2 cores.
test-valgrind: $(REL_OUT)/test_cblite $(REL_OUT)/test_views reliability-bins
	@command -v $(VALGRIND) >/dev/null || { echo "test-valgrind: SKIPPED (valgrind not installed)"; exit 0; }
	$(call SAN_RUN,valgrind,REL_TMPDIR=$(REL_TMPDIR),$(VALGRIND) $(VG_FLAGS) $(REL_OUT)/test_cblite ;; $(VALGRIND) $(VG_FLAGS) $(REL_OUT)/test_views ;; $(VALGRIND) $(VG_FLAGS) --trace-children=yes $(REL_OUT)/bad_input_test ;; $(VALGRIND) $(VG_FLAGS) $(REL_OUT)/stress_test --threads 3 --ops 60 --readers 1 --procs 0 --watchdog 900)

# The bounded run `make test` includes: ASan (with leaks) and TSan over the C test
# programs (core, views, sync surface, listener, replicator), bad input and a short
# stress — about 10 minutes on a fresh 2-core machine, most of it the two Swift builds.
# A sanitized library that does not build fails the run here (test-asan/test-tsan skip).
test-sanitize-short:
	@rc=0; \
	$(MAKE) -f $(REL_MK) --no-print-directory $(REL_OUT)/asan/lib/libcblite.so $(REL_OUT)/tsan/lib/libcblite.so; \
	test -e $(REL_OUT)/asan/lib/libcblite.so || { echo "test-sanitize-short: the ASan library did not build"; rc=1; }; \
	test -e $(REL_OUT)/tsan/lib/libcblite.so || { echo "test-sanitize-short: the TSan library did not build"; rc=1; }; \
	if [ $$rc -eq 0 ]; then \
	  $(MAKE) -f $(REL_MK) --no-print-directory asan-run || rc=1; \
	  $(MAKE) -f $(REL_MK) --no-print-directory tsan-run || rc=1; fi; \
	if [ $$rc -ne 0 ]; then echo "test-sanitize-short: findings (see above)"; exit 1; fi; echo "test-sanitize-short: clean"

test-sanitize:
	@rc=0; \
	$(MAKE) -f $(REL_MK) --no-print-directory test-asan || rc=1; \
	$(MAKE) -f $(REL_MK) --no-print-directory test-tsan || rc=1; \
	$(MAKE) -f $(REL_MK) --no-print-directory test-valgrind || rc=1; \
	if [ $$rc -ne 0 ]; then echo "test-sanitize: findings (see above)"; exit 1; fi; echo "test-sanitize: clean"

# ---- fuzzing ---------------------------------------------------------------------------
# libFuzzer needs clang's -fsanitize=fuzzer (the Swift toolchain's clang has it). The
# library is taken, best first, from: a coverage-instrumented ASan build (.build-fuzz,
# built here: SanitizerCoverage on the Swift and C code, so mutations are guided by the
# engine's code), the ASan build, or the release .so (then only the harness is covered).
FUZZ_OUT     := $(REL_OUT)/fuzz
FUZZ_CORPUS  := $(REL_DIR)/corpus
FUZZ_COVERAGE ?= 1
FUZZ_FLAGS   ?= -rss_limit_mb=4096 -timeout=30 -max_len=4096

$(FUZZ_OUT)/lib/libcblite.so: $(SAN_SWIFT_SOURCES)
	@mkdir -p $(FUZZ_OUT)/lib
	@if [ "$(FUZZ_COVERAGE)" = 1 ]; then \
	  if [ ! -d .build-fuzz/checkouts ] && [ -d .build/checkouts ]; then \
	    mkdir -p .build-fuzz && cp -r .build/checkouts .build/repositories .build/workspace-state.json .build-fuzz/; fi; \
	  echo "fuzz: coverage-instrumented ASan build of the library in .build-fuzz (several minutes the first time)"; \
	  if $(SWIFT) build -c debug --scratch-path .build-fuzz --sanitize=address \
	       -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp -Xcc -fsanitize-coverage=inline-8bit-counters,pc-table,trace-cmp \
	       --product cblite > $(FUZZ_OUT)/build.log 2>&1; then ln -sf $(CURDIR)/.build-fuzz/debug/libcblite.so $@; exit 0; fi; \
	  echo "fuzz: coverage build failed (see $(FUZZ_OUT)/build.log); falling back"; fi; \
	if [ -e .build-asan/debug/libcblite.so ]; then ln -sf $(CURDIR)/.build-asan/debug/libcblite.so $@; \
	else ln -sf $(CURDIR)/$(REL_LIB) $@; fi

$(FUZZ_OUT)/fuzz_target: $(REL_DIR)/fuzz_target.c include/cblite.h $(FUZZ_OUT)/lib/libcblite.so
	@$(SWIFT_CLANG) -fsanitize=fuzzer -c -x c /dev/null -o /dev/null 2>/dev/null || \
	  { echo "fuzz: $(SWIFT_CLANG) lacks -fsanitize=fuzzer (fallback: apt-get install clang-14 libclang-rt-14-dev, SWIFT_CLANG=clang-14)"; exit 1; }
	$(SWIFT_CLANG) -std=c99 -Wall -Wextra -Werror -g -O1 -fsanitize=fuzzer,address -fuse-ld=lld -Iinclude -o $@ $< \
	  -L$(FUZZ_OUT)/lib -lcblite -lpthread -Wl,-rpath,$(CURDIR)/$(FUZZ_OUT)/lib -Wl,-rpath,$(SWIFT_RTLIB) 2>&1 | grep -v 'Cannot export local symbol' || true
	@test -x $@

fuzz-build: $(FUZZ_OUT)/fuzz_target

# Regression inputs first (each once), then a timed run from the seed corpus. A crash is
# copied into $(FUZZ_CORPUS)/regressions/ (so it is replayed from then on) and fails.
fuzz: $(FUZZ_OUT)/fuzz_target
	@mkdir -p $(FUZZ_OUT)/corpus $(FUZZ_OUT)/artifacts $(FUZZ_CORPUS)/regressions
	@n=$$(find $(FUZZ_CORPUS)/regressions -type f | wc -l); echo "fuzz: replaying $$n regression input(s)"; \
	if [ $$n -gt 0 ]; then $(SAN_RUN_ENV) FUZZ_TMPDIR=$(REL_TMPDIR) $(FUZZ_OUT)/fuzz_target $(FUZZ_FLAGS) \
	  $$(find $(FUZZ_CORPUS)/regressions -type f) > $(FUZZ_OUT)/regress.log 2>&1 || \
	  { tail -30 $(FUZZ_OUT)/regress.log; echo "fuzz: a regression input fails again"; exit 1; }; fi
	@mkdir -p $(REL_TMPDIR); echo "fuzz: $(FUZZ_SECONDS) s from $$(find $(FUZZ_CORPUS) -maxdepth 1 -type f | wc -l) seed inputs"; \
	$(SAN_RUN_ENV) FUZZ_TMPDIR=$(REL_TMPDIR) ASAN_OPTIONS=detect_leaks=0 $(FUZZ_OUT)/fuzz_target $(FUZZ_FLAGS) \
	  -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -artifact_prefix=$(FUZZ_OUT)/artifacts/ \
	  $(FUZZ_OUT)/corpus $(FUZZ_CORPUS) > $(FUZZ_OUT)/fuzz.log 2>&1; rc=$$?; \
	grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' $(FUZZ_OUT)/fuzz.log | tail -2; \
	grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb' $(FUZZ_OUT)/fuzz.log; \
	echo "fuzz: corpus now $$(ls $(FUZZ_OUT)/corpus | wc -l) generated + $$(find $(FUZZ_CORPUS) -maxdepth 1 -type f | wc -l) seed inputs"; \
	rm -rf $(REL_TMPDIR)/cblite-fuzz-*; \
	if [ $$rc -ne 0 ]; then grep -E -A25 'ERROR|INVARIANT|deadly signal' $(FUZZ_OUT)/fuzz.log | head -60; \
	  for a in $(FUZZ_OUT)/artifacts/*; do [ -f "$$a" ] && cp "$$a" $(FUZZ_CORPUS)/regressions/ && echo "fuzz: new regression input $(FUZZ_CORPUS)/regressions/$$(basename $$a)"; done; \
	  echo "fuzz: FAILED (log $(FUZZ_OUT)/fuzz.log)"; exit 1; fi; echo "fuzz: no crash"

# ---- listener fuzzing (HTTP parsing) -------------------------------------------------------
# fuzz_listener.c feeds each input as raw HTTP request bytes to two running listeners
# (cbl_server_start + cbl_server_serve) over a database with seeded documents; same
# library choice, regression replay and crash handling as `fuzz` above. Leaks: LeakSanitizer
# once at exit, after the harness stopped the listeners and closed the database, in the
# replay and in the timed run (FUZZ_LISTENER_LEAKS=0 turns it off there); libFuzzer's
# per-input leak check is off (-detect_leaks=0): with the listeners running it reports
# their live thread-pool queues, which Swift reaches through tagged enum payloads.
FUZZ_L_CORPUS := $(REL_DIR)/corpus_listener
FUZZ_L_FLAGS  ?= -rss_limit_mb=4096 -timeout=60 -max_len=8192
FUZZ_LISTENER_LEAKS ?= 1
# No Swift runtime backtracer: on a finding its crash handler reads memory that ASan then
# reports instead of the finding (libFuzzer prints the stack).
FUZZ_L_ENV    = FUZZ_TMPDIR=$(REL_TMPDIR) SWIFT_BACKTRACE=enable=no

.PHONY: fuzz-listener fuzz-listener-build

$(FUZZ_OUT)/fuzz_listener: $(REL_DIR)/fuzz_listener.c include/cblite.h $(FUZZ_OUT)/lib/libcblite.so
	@$(SWIFT_CLANG) -fsanitize=fuzzer -c -x c /dev/null -o /dev/null 2>/dev/null || \
	  { echo "fuzz: $(SWIFT_CLANG) lacks -fsanitize=fuzzer (fallback: apt-get install clang-14 libclang-rt-14-dev, SWIFT_CLANG=clang-14)"; exit 1; }
	$(SWIFT_CLANG) -std=c99 -Wall -Wextra -Werror -g -O1 -fsanitize=fuzzer,address -fuse-ld=lld -Iinclude -o $@ $< \
	  -L$(FUZZ_OUT)/lib -lcblite -lpthread -Wl,-rpath,$(CURDIR)/$(FUZZ_OUT)/lib -Wl,-rpath,$(SWIFT_RTLIB) 2>&1 | grep -v 'Cannot export local symbol' || true
	@test -x $@

fuzz-listener-build: $(FUZZ_OUT)/fuzz_listener

# Regression inputs first (each once), then a timed run from the seed corpus. A crash is
# copied into $(FUZZ_L_CORPUS)/regressions/ (so it is replayed from then on) and fails.
fuzz-listener: $(FUZZ_OUT)/fuzz_listener
	@mkdir -p $(FUZZ_OUT)/corpus_listener $(FUZZ_OUT)/artifacts_listener $(FUZZ_L_CORPUS)/regressions $(REL_TMPDIR)
	@n=$$(find $(FUZZ_L_CORPUS)/regressions -type f | wc -l); echo "fuzz-listener: replaying $$n regression input(s)"; \
	if [ $$n -gt 0 ]; then $(SAN_RUN_ENV) $(FUZZ_L_ENV) $(FUZZ_OUT)/fuzz_listener $(FUZZ_L_FLAGS) -detect_leaks=0 \
	  $$(find $(FUZZ_L_CORPUS)/regressions -type f) > $(FUZZ_OUT)/regress_listener.log 2>&1 || \
	  { tail -30 $(FUZZ_OUT)/regress_listener.log; echo "fuzz-listener: a regression input fails again"; exit 1; }; fi
	@echo "fuzz-listener: $(FUZZ_SECONDS) s from $$(find $(FUZZ_L_CORPUS) -maxdepth 1 -type f | wc -l) seed inputs"; \
	$(SAN_RUN_ENV) $(FUZZ_L_ENV) ASAN_OPTIONS=detect_leaks=$(FUZZ_LISTENER_LEAKS) $(FUZZ_OUT)/fuzz_listener $(FUZZ_L_FLAGS) \
	  -detect_leaks=0 -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -artifact_prefix=$(FUZZ_OUT)/artifacts_listener/ \
	  $(FUZZ_OUT)/corpus_listener $(FUZZ_L_CORPUS) > $(FUZZ_OUT)/fuzz_listener.log 2>&1; rc=$$?; \
	grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' $(FUZZ_OUT)/fuzz_listener.log | tail -2; \
	grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb|^fuzz_listener: [0-9]+ inputs' $(FUZZ_OUT)/fuzz_listener.log; \
	echo "fuzz-listener: corpus now $$(ls $(FUZZ_OUT)/corpus_listener | wc -l) generated + $$(find $(FUZZ_L_CORPUS) -maxdepth 1 -type f | wc -l) seed inputs"; \
	rm -rf $(REL_TMPDIR)/cblite-fzl-*; \
	if [ $$rc -ne 0 ]; then grep -E -A25 'ERROR|INVARIANT|deadly signal' $(FUZZ_OUT)/fuzz_listener.log | head -60; \
	  for a in $(FUZZ_OUT)/artifacts_listener/*; do [ -f "$$a" ] && cp "$$a" $(FUZZ_L_CORPUS)/regressions/ && echo "fuzz-listener: new regression input $(FUZZ_L_CORPUS)/regressions/$$(basename $$a)"; done; \
	  echo "fuzz-listener: FAILED (log $(FUZZ_OUT)/fuzz_listener.log)"; exit 1; fi; echo "fuzz-listener: no crash"

reliability-clean:
	rm -rf $(REL_OUT) .build-asan .build-tsan .build-fuzz
