# The listener from the outside: `cblite serve` (built by `make cli`) driven by Python's
# http.client over plain HTTP and TLS, and the replay of CouchDB 3.5's recorded exchanges
# (../shared/couchdb-3.5, or COUCHDB_RECORDINGS).
.PHONY: test-listener
test-listener: cli
	CBLITE_BIN=$(CURDIR)/$(BUILD)/bin/cblite $(PYTHON) -m pytest -q Tests/listener
