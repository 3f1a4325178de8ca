# Faults: disk full and I/O errors at every write point. In Swift (a debug build, which
# carries the fault injector): the N-th write, sync, truncate, rename or mkdir failed for
# every N of a scripted workload (FaultInjectionTests), a real tmpfs filled up
# (DiskFullTests), the served directory's files vanishing (ServedDirectoryFaultTests).
# Through libcblite.so: a tmpfs filled under the C ABI and the listener (Tests/faults).
# Mounting needs root: where CI=true (CI runs as root) a test that cannot mount fails.
.PHONY: test-faults
test-faults: lib
	$(SWIFT) test --filter 'CBLiteCoreTests.(FaultInjectionTests|DiskFullTests)|CBLiteListenerTests.ServedDirectoryFaultTests'
	CBLITE_LIBRARY=$(CURDIR)/$(BUILD)/lib/$(SO_NAME) $(PYTHON) -m pytest -q Tests/faults
