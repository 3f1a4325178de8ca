# cblite — build, test, install.
#   make            release libcblite.so (build/lib) and the `cblite` tool (build/bin)
#   make test       everything CI runs: Swift tests, the C test programs, pytest, install check,
#                   the short reliability runs (crash, stress, hostile input), disk full and I/O
#                   errors at every write point (test-faults), the listener from
#                   outside (HTTP/TLS, CouchDB's recorded exchanges) and the PyPI CouchDB client's suite,
#                   the replicator against CouchDB's recorded answers and through the tool, and a
#                   bounded ASan + TSan run over the C test programs (test-sanitize-short), and peer
#                   discovery between two network namespaces with their own Avahi daemons (test-discovery, as root)
#   make demo       a short C program showing documents, revisions and conflicts
#   make install    PREFIX=/usr/local DESTDIR=... LIBDIR=$(PREFIX)/lib
SHELL        := /bin/bash
# The version is written once, in the header (CBLITE_VERSION).
VERSION      := $(shell sed -n 's/^\#define CBLITE_VERSION  *"\([^"]*\)".*/\1/p' include/cblite.h)
SOVERSION    := 1
PREFIX       ?= /usr/local
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
BINDIR       ?= $(PREFIX)/bin
DESTDIR      ?=
PYTHON       ?= python3
CC           ?= cc
CXX          ?= c++
SWIFT        ?= swift
BUILD        := build
SO_REAL      := libcblite.so.$(VERSION)
SO_NAME      := libcblite.so.$(SOVERSION)
AMALGAMATION := Sources/CSQLCipher/sqlite3.c
DUKTAPE      := Sources/CDuktape/duktape/duktape.c
SWIFT_SOURCES := $(shell find Sources -name '*.swift' -o -name '*.h' -o -name '*.c' 2>/dev/null) Package.swift include/cblite.h
APT_PACKAGES := pkg-config libsqlite3-dev libsqlcipher-dev tcl libssl-dev dpkg-dev libicu-dev duktape-dev \
                avahi-daemon libavahi-client-dev libqrencode-dev zbar-tools iproute2 dbus
# The shipped .so carries the Swift runtime (-static-stdlib: no toolchain needed to load it;
# SwiftPM's --static-swift-stdlib does not work for a dynamic product), exports only cbl_*
# (exports.map, a linker version script: the SQLCipher compiled into the library keeps its
# sqlite3_* symbols to itself, so a host's own SQLite and ours never interpose) and has a
# versioned soname. These flags live here, not in Package.swift, so that the Swift test
# builds are made without them.
RELEASE_FLAGS := -c release -Xswiftc -static-stdlib
LIB_LINK_FLAGS := -Xlinker --version-script=$(CURDIR)/Sources/CBLiteCAPI/exports.map \
                  -Xlinker -soname=$(SO_NAME)
CFLAGS_TEST  := -std=c99 -Wall -Wextra -Werror -g -Iinclude

.PHONY: all lib cli deps deps-build sqlcipher test test-swift test-c test-python test-replicator test-cli test-install test-discovery \
        test-header demo install uninstall clean

all: lib cli

# ---- set-up -------------------------------------------------------------------------
# Installs the Debian packages the build and tests need (when root and missing) and the
# Python test dependencies. Safe to run again.
deps: deps-build
	@$(PYTHON) -c 'import pytest, hypothesis' 2>/dev/null || $(PYTHON) -m pip install -q pytest hypothesis

# The Debian packages the build itself needs (the amalgamation generator, SQLCipher's
# libcrypto, pkg-config for install checks): every build target depends on this.
deps-build:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then echo "deps: apt-get install$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "deps: missing Debian packages:$$missing (run as root or install them)"; exit 1; fi; \
	fi

# Run again when the pin changes: generate.sh replaces an amalgamation of another version
# (and leaves the pinned one untouched).
sqlcipher: $(AMALGAMATION)
$(AMALGAMATION): Sources/CSQLCipher/cblite/pinned_sqlite.h | deps-build
	Sources/CSQLCipher/generate.sh

# Duktape's source, copied (and checked) from Debian's duktape-dev.
.PHONY: duktape
duktape: $(DUKTAPE)
$(DUKTAPE): Sources/CDuktape/generate.sh | deps-build
	Sources/CDuktape/generate.sh

# ---- build --------------------------------------------------------------------------
lib: $(BUILD)/lib/$(SO_REAL)
$(BUILD)/lib/$(SO_REAL): $(AMALGAMATION) $(DUKTAPE) $(SWIFT_SOURCES) Sources/CBLiteCAPI/exports.map
	$(SWIFT) build $(RELEASE_FLAGS) --product cblite $(LIB_LINK_FLAGS)
	@mkdir -p $(BUILD)/lib
	cp .build/release/libcblite.so $@.tmp && strip --strip-unneeded $@.tmp && mv $@.tmp $@
	ln -sf $(SO_REAL) $(BUILD)/lib/$(SO_NAME)
	ln -sf $(SO_NAME) $(BUILD)/lib/libcblite.so

cli: $(BUILD)/bin/cblite
$(BUILD)/bin/cblite: $(AMALGAMATION) $(DUKTAPE) $(SWIFT_SOURCES)
	$(SWIFT) build $(RELEASE_FLAGS) --product cblite-cli
	@mkdir -p $(BUILD)/bin
	cp .build/release/cblite-cli $@.tmp && strip $@.tmp && mv $@.tmp $@

# ---- tests --------------------------------------------------------------------------
test: deps $(AMALGAMATION) $(DUKTAPE) all
	$(MAKE) test-swift
	$(MAKE) test-c
	$(MAKE) test-python
	$(MAKE) test-install
	$(MAKE) test-reliability
	$(MAKE) test-faults
	$(MAKE) test-listener
	$(MAKE) test-couchdb-client
	$(MAKE) test-listener-library
	$(MAKE) test-replicator
	$(MAKE) test-cli
	$(MAKE) test-sanitize-short
	$(MAKE) test-discovery
	@echo "make test: all levels passed"

# The fault sweeps and the real disk-full tests run once, in test-faults.
test-swift: $(AMALGAMATION) $(DUKTAPE)
	$(SWIFT) test --skip 'CBLiteCoreTests.(FaultInjectionTests|DiskFullTests)'

$(BUILD)/tests/%: Tests/c/%.c Tests/c/check.h include/cblite.h $(BUILD)/lib/$(SO_REAL)
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS_TEST) -o $@ $< -L$(BUILD)/lib -lcblite -lpthread -Wl,-rpath,$(CURDIR)/$(BUILD)/lib

# The C test program (every function of the header), the header as C99 and C++, and a
# host that links the system libsqlite3 beside libcblite (SQLite symbol interposition).
test-c: lib test-header $(BUILD)/tests/test_cblite $(BUILD)/tests/test_interpose $(BUILD)/tests/test_views $(BUILD)/tests/test_attachments $(BUILD)/tests/test_sync $(BUILD)/tests/test_server $(BUILD)/tests/test_replicator $(BUILD)/tests/test_diagnosis $(BUILD)/tests/test_javascript $(BUILD)/tests/test_mango $(BUILD)/tests/test_fulltext $(BUILD)/tests/test_discovery $(BUILD)/tests/test_view_fulltext
	$(BUILD)/tests/test_cblite
	$(BUILD)/tests/test_interpose
	$(BUILD)/tests/test_views
	$(BUILD)/tests/test_attachments
	$(BUILD)/tests/test_sync
	$(BUILD)/tests/test_server
	$(BUILD)/tests/test_replicator
	$(BUILD)/tests/test_diagnosis
	$(BUILD)/tests/test_javascript
	$(BUILD)/tests/test_mango
	$(BUILD)/tests/test_fulltext
	$(BUILD)/tests/test_discovery
	$(BUILD)/tests/test_view_fulltext

$(BUILD)/tests/test_interpose: Tests/c/test_interpose.c include/cblite.h $(BUILD)/lib/$(SO_REAL)
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS_TEST) -o $@ $< -L$(BUILD)/lib -lcblite -lsqlite3 -lpthread -Wl,-rpath,$(CURDIR)/$(BUILD)/lib

test-header: include/cblite.h
	@mkdir -p $(BUILD)/tests
	echo '#include "cblite.h"' | $(CC) -std=c99 -pedantic -Wall -Wextra -Werror -Iinclude -x c -c -o /dev/null -
	echo '#include "cblite.h"' | $(CXX) -std=c++11 -pedantic -Wall -Wextra -Werror -Iinclude -x c++ -c -o /dev/null -
	@# CBL_WARN_UNUSED: a dropped status is an error under -Werror (C99 and C++17), (void)! and
	@# CBL_NO_WARN_UNUSED are the ways out.
	@drop='int f(void) { cbl_db_close(0, 0); return 0; }'; \
	for c in "$(CC) -std=c99 -x c" "$(CXX) -std=c++17 -x c++"; do \
	  if printf '#include "cblite.h"\n%s\n' "$$drop" | $$c -Wall -Werror -Iinclude -c -o /dev/null - 2>/dev/null; then \
	    echo "test-header: a dropped cbl_status compiled without a warning ($$c)"; exit 1; fi; \
	  printf '#include "cblite.h"\nint f(void) { (void)!cbl_db_close(0, 0); return 0; }\n' | $$c -Wall -Werror -Iinclude -c -o /dev/null - || exit 1; \
	  printf '#define CBL_NO_WARN_UNUSED\n#include "cblite.h"\n%s\n' "$$drop" | $$c -Wall -Werror -Iinclude -c -o /dev/null - || exit 1; \
	done; echo "test-header: CBL_WARN_UNUSED warns, (void)! and CBL_NO_WARN_UNUSED silence it"
	@# CBL_DEPRECATED: a call of a deprecated function is an error under -Werror (C and C++);
	@# CBL_NO_WARN_DEPRECATED is the way out.
	@old='int f(void) { return cbl_db_exists("x", 0); }'; \
	for c in "$(CC) -std=c99 -x c" "$(CXX) -std=c++17 -x c++"; do \
	  if printf '#include "cblite.h"\n%s\n' "$$old" | $$c -Wall -Werror -Iinclude -c -o /dev/null - 2>/dev/null; then \
	    echo "test-header: a deprecated call compiled without a warning ($$c)"; exit 1; fi; \
	  printf '#define CBL_NO_WARN_DEPRECATED\n#include "cblite.h"\n%s\n' "$$old" | $$c -Wall -Werror -Iinclude -c -o /dev/null - || exit 1; \
	done; echo "test-header: CBL_DEPRECATED warns, CBL_NO_WARN_DEPRECATED silences it"
	@# The header's own rules: names, deprecations, contents (and that the check can fail).
	$(PYTHON) Tests/c/check_header.py include/cblite.h
	$(PYTHON) Tests/c/check_header.py --self-test include/cblite.h

# pytest (the suite also runs mypy --strict, the examples and the wheel in a fresh venv).
test-python: lib
	@$(PYTHON) -c 'import pytest, hypothesis, mypy' 2>/dev/null || $(PYTHON) -m pip install -q pytest hypothesis mypy
	cd bindings/python && CBLITE_LIBRARY=$(CURDIR)/$(BUILD)/lib/$(SO_NAME) $(PYTHON) -m pytest -q tests

# The platform wheel (py3-none-<platform>) with libcblite.so inside: build/wheel/*.whl
.PHONY: wheel
wheel: lib
	$(PYTHON) bindings/python/build_wheel.py --lib $(BUILD)/lib/$(SO_REAL) --out $(BUILD)/wheel

# The `cblite` tool from the outside: inspection, diagnosis, export/import, salvage and the
# progress bar under a pseudo-terminal (Tests/cli/test_tool.sh); push / pull / sync against
# `cblite serve` (Tests/cli/test_replicate.sh).
test-cli: cli lib
	CBLITE_LIBRARY=$(CURDIR)/$(BUILD)/lib/$(SO_NAME) Tests/cli/test_tool.sh $(CURDIR)/$(BUILD)/bin/cblite
	Tests/cli/test_replicate.sh $(CURDIR)/$(BUILD)/bin/cblite

# The replicator against a CouchDB 3.5 peer made of its recorded answers
# (Tests/replicator/couchdb_replay.py over Tests/Fixtures/couchdb-3.5), through the bindings
# and, for what only the tool does (a local --create-target), through `cblite`.
test-replicator: lib cli
	CBLITE_LIBRARY=$(CURDIR)/$(BUILD)/lib/$(SO_NAME) CBLITE_BIN=$(CURDIR)/$(BUILD)/bin/cblite $(PYTHON) -m pytest -q Tests/replicator

# Peer discovery (DNS-SD through Avahi) between two network namespaces joined by a veth
# pair, each with its own dbus-daemon and avahi-daemon (Tests/discovery/netns.py): the
# tool, the C library (test_discovery) and the bindings advertise, browse, sync by name
# and see the withdrawal; and `serve --qr` decoded back with zbarimg. Needs root, as CI
# runs: it fails (never skips) when the namespaces or daemons cannot be set up. ~1 minute.
test-discovery: lib cli $(BUILD)/tests/test_discovery
	CBLITE_LIBRARY=$(CURDIR)/$(BUILD)/lib/$(SO_NAME) CBLITE_BIN=$(CURDIR)/$(BUILD)/bin/cblite \
	  CBLITE_TEST_DISCOVERY=$(CURDIR)/$(BUILD)/tests/test_discovery \
	  timeout 300 $(PYTHON) -m pytest -q Tests/discovery

# Installs into a temporary DESTDIR and builds a C program exactly as users would:
# cc app.c $(pkg-config --cflags --libs cblite)
test-install: lib cli
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(MAKE) --no-print-directory install DESTDIR=$$tmp PREFIX=/usr/local >/dev/null; \
	export PKG_CONFIG_SYSROOT_DIR=$$tmp PKG_CONFIG_PATH=$$tmp/usr/local/lib/pkgconfig; \
	flags=$$(pkg-config --cflags --libs cblite); echo "pkg-config: $$flags"; \
	$(CC) -std=c99 -Wall -Werror -o $$tmp/app Tests/c/install_app.c $$flags; \
	LD_LIBRARY_PATH=$$tmp/usr/local/lib $$tmp/app; \
	test -L $$tmp/usr/local/lib/libcblite.so -a -L $$tmp/usr/local/lib/$(SO_NAME) -a -f $$tmp/usr/local/lib/$(SO_REAL); \
	test -x $$tmp/usr/local/bin/cblite; \
	deps=$$(ldd $$tmp/usr/local/lib/$(SO_REAL) | awk '{print $$1}' | grep -vE '^(linux-vdso|/lib64/ld-linux)' | tr '\n' ' '); \
	echo "libcblite needs: $$deps"; \
	if echo "$$deps" | grep -qiE 'swift|Foundation|dispatch|sqlite|sqlcipher'; then echo "unexpected dependency"; exit 1; fi; \
	echo "test-install: passed"

# ---- demo ---------------------------------------------------------------------------
demo: lib
	@mkdir -p $(BUILD)/demo
	@$(CC) -std=c99 -Wall -Werror -Iinclude -o $(BUILD)/demo/demo examples/demo.c \
	  -L$(BUILD)/lib -lcblite -Wl,-rpath,$(CURDIR)/$(BUILD)/lib
	@rm -rf $(BUILD)/demo/data && $(BUILD)/demo/demo $(BUILD)/demo/data

# ---- install ------------------------------------------------------------------------
install: lib cli
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(BINDIR)
	install -m 0755 $(BUILD)/lib/$(SO_REAL) $(DESTDIR)$(LIBDIR)/$(SO_REAL)
	ln -sf $(SO_REAL) $(DESTDIR)$(LIBDIR)/$(SO_NAME)
	ln -sf $(SO_NAME) $(DESTDIR)$(LIBDIR)/libcblite.so
	install -m 0644 include/cblite.h $(DESTDIR)$(INCLUDEDIR)/cblite.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	  pkgconfig/cblite.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/cblite.pc
	install -m 0755 $(BUILD)/bin/cblite $(DESTDIR)$(BINDIR)/cblite

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(SO_REAL) $(DESTDIR)$(LIBDIR)/$(SO_NAME) $(DESTDIR)$(LIBDIR)/libcblite.so \
	  $(DESTDIR)$(INCLUDEDIR)/cblite.h $(DESTDIR)$(LIBDIR)/pkgconfig/cblite.pc $(DESTDIR)$(BINDIR)/cblite

-include bench/bench.mk
-include Tests/reliability/reliability.mk
-include Tests/faults/faults.mk

clean:
	rm -rf $(BUILD) .build
-include Tests/listener/listener.mk
