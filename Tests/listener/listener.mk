# The listener from the outside: `cblite serve` (built by `make cli`) driven by Python's
# http.client over plain HTTP and TLS, and the replay of CouchDB 3.5's recorded exchanges
# (Tests/Fixtures/couchdb-3.5, or COUCHDB_RECORDINGS).
.PHONY: test-listener
test-listener: cli
	CBLITE_BIN=$(CURDIR)/$(BUILD)/bin/cblite $(PYTHON) -m pytest -q Tests/listener

# The PyPI CouchDB client's own test suite (version 1.2) against `cblite serve`, with the
# expected failures and their reasons in Tests/listener/couchdb_client_expected_failures.txt.
.PHONY: test-couchdb-client
test-couchdb-client: cli
	CBLITE_BIN=$(CURDIR)/$(BUILD)/bin/cblite $(PYTHON) Tests/listener/run_couchdb_client.py

# The same two outside suites (transcript replay, the PyPI client's) a second time, against
# the listener as users embed it: started through libcblite.so by the Python bindings
# (Tests/listener/serve_with_bindings.py), not the tool's static copy of the engine.
LISTENER_THROUGH_LIBRARY := CBLITE_LIBRARY=$(CURDIR)/$(BUILD)/lib/$(SO_NAME) \
	CBLITE_SERVE="$(PYTHON) $(CURDIR)/Tests/listener/serve_with_bindings.py"
.PHONY: test-listener-library
test-listener-library: lib
	$(LISTENER_THROUGH_LIBRARY) $(PYTHON) -m pytest -q Tests/listener/test_transcript_replay.py
	$(LISTENER_THROUGH_LIBRARY) $(PYTHON) Tests/listener/run_couchdb_client.py
