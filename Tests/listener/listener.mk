# The listener from the outside: `cblite serve` (built by `make cli`) driven by Python's
# http.client over plain HTTP and TLS, and the replay of CouchDB 3.5's recorded exchanges
# (../shared/couchdb-3.5, or COUCHDB_RECORDINGS).
.PHONY: test-listener
test-listener: cli
	CBLITE_BIN=$(CURDIR)/$(BUILD)/bin/cblite $(PYTHON) -m pytest -q Tests/listener

# The PyPI CouchDB client's own test suite (version 1.2) against `cblite serve`, with the
# expected failures and their reasons in Tests/listener/couchdb_client_expected_failures.txt.
.PHONY: test-couchdb-client
test-couchdb-client: cli
	CBLITE_BIN=$(CURDIR)/$(BUILD)/bin/cblite $(PYTHON) Tests/listener/run_couchdb_client.py
