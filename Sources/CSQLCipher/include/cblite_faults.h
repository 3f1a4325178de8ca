/* Test-only fault injection (cblite/fault_injection.c): the N-th "fault point" — a write,
 * sync or truncate of one of SQLite's files (database, WAL, journal) or a write, sync,
 * rename or directory creation of the attachment store (Swift's FaultPoint) — fails as a
 * full disk (ENOSPC) or an I/O error (EIO) would. One counter for all of them, so a test
 * can sweep N over every write point of a workload.
 *
 * Defined only in builds with CBLITE_FAULT_INJECTION (debug builds, Package.swift): the
 * release library has none of these symbols, and no VFS shim in its SQLite. Declared
 * unconditionally because Swift's importer does not see the C target's defines. */
#ifndef CBLITE_FAULTS_H
#define CBLITE_FAULTS_H
#include <stdint.h>

/* The kinds of fault points (Swift's FaultPoint.Kind has the same numbers). */
#define CBLITE_FAULT_WRITE    0
#define CBLITE_FAULT_SYNC     1
#define CBLITE_FAULT_TRUNCATE 2
#define CBLITE_FAULT_RENAME   3
#define CBLITE_FAULT_CREATE   4

/* Registers the shim over the unix VFS as SQLite's default (part of
 * cblite_sqlite_configure in fault-injection builds). Idempotent; an SQLite code. */
int cblite_faults_install(void);

/* From now on, counts fault points; the `fail_at`-th (1-based) fails with `errnum`
 * (ENOSPC or EIO), and when `sticky`, every later one too (a disk that stays full) until
 * cblite_faults_disarm. fail_at 0: count only. Resets the counters. */
void cblite_faults_arm(int64_t fail_at, int errnum, int sticky);

/* Stops counting and failing: space is back. */
void cblite_faults_disarm(void);

/* Fault points passed, and faults injected, since the last arm. */
int64_t cblite_faults_count(void);
int64_t cblite_faults_injected(void);

/* Called at each fault point (kind: CBLITE_FAULT_*): 0 to go on, else the errno the
 * operation must fail with. Thread-safe. */
int cblite_fault_point(int kind);

#endif
