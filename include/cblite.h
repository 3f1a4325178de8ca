/*
 * cblite.h — the C interface of libcblite, an embedded, syncable JSON document
 * database in the model of Couchbase Lite.
 *
 * Conventions (they hold for every function below unless its comment says otherwise):
 *
 *  - Status. Fallible calls return a cbl_status: CBL_OK (0) on success, otherwise an
 *    HTTP-like code (CBL_BAD_REQUEST, CBL_NOT_FOUND, ...). When `err` is not NULL it is
 *    filled on every path: code CBL_OK and an empty message on success, the same code as
 *    the return value and a human-readable message on failure. `err` may always be NULL.
 *
 *  - Errors. The comment of every function that returns a cbl_status lists what it can
 *    return besides CBL_OK, and when: "Errors: 404 (no such document), 503, 500". Four
 *    causes are shared by many calls and are not repeated in the parentheses:
 *      400  a NULL required argument or out-parameter, a string that is not UTF-8, an
 *           invalid handle (see Handles), or a handle whose database handle has been
 *           closed (a collection, a view, a result made from one);
 *      404  on a call taking a collection handle (or a view or result made from one): the
 *           collection has been deleted;
 *      500  a storage failure: I/O error, a corrupt or replaced file;
 *      507  the disk (or the quota) is full: on any call that writes. The failed call
 *           wrote nothing, every write acknowledged before it stays, and the same handle
 *           writes again once space is freed (no need to reopen).
 *    A list that names 400 or 404 also means these; causes in parentheses add to them.
 *    503 means the busy timeout passed (see cbl_db_open) and is listed where it applies.
 *    A function that returns void cannot fail; one that returns a value directly says
 *    what it returns when it cannot give an answer.
 *
 *  - Out-parameters are set on every path: to the result on success, to NULL / 0 on
 *    failure. They must not be NULL unless the comment says "optional".
 *
 *  - Strings are NUL-terminated UTF-8. Documents, options and lists cross the interface
 *    as JSON text. A `char*` the library returns (through an out-parameter) belongs to
 *    the caller, who releases it with cbl_free(). A `const char*` the library passes to a
 *    callback is valid only during that callback.
 *
 *  - Handles are opaque pointers. Each is made by a call of this header and released by
 *    exactly one call (two for cbl_db and cbl_blob_writer, either of which releases it):
 *
 *      handle              made by                              released by
 *      cbl_db              cbl_db_open                          cbl_db_close, or
 *                                                               cbl_db_delete
 *      cbl_collection      cbl_db_default_collection,           cbl_collection_release
 *                          cbl_db_collection,
 *                          cbl_db_create_collection
 *      cbl_listener_token  cbl_collection_add_change_listener,  cbl_listener_token_remove
 *                          cbl_collection_add_document_listener,
 *                          cbl_db_add_change_listener
 *      cbl_blob_writer     cbl_blob_writer_create               cbl_blob_writer_finish,
 *                                                               or _cancel
 *      cbl_blob_reader     cbl_doc_open_attachment              cbl_blob_reader_close
 *      cbl_view            cbl_collection_view                  cbl_view_release
 *      cbl_query_result    cbl_view_query,                      cbl_query_result_release
 *                          cbl_collection_all_docs_query,       (not the one a live
 *                          cbl_collection_find,
 *                          cbl_collection_search
 *                                                               query's callback gets:
 *                                                               the library's)
 *      cbl_live_query      cbl_live_query_start                 cbl_live_query_stop
 *      cbl_server          cbl_server_start                     cbl_server_stop
 *      cbl_replicator      cbl_replicator_start                 cbl_replicator_stop
 *      cbl_browser         cbl_browser_start                    cbl_browser_stop
 *      cbl_emitter         the library, for one map call        none: valid during it
 *
 *    Handles are independent: closing a database handle releases nothing made from it.
 *    Its collections, views and results stay allocated (cbl_instance_count counts them)
 *    until released, and their calls fail with 400 meanwhile; its live queries and
 *    replicators stop but keep their handles until cbl_live_query_stop /
 *    cbl_replicator_stop; its listener tokens stay valid to remove; blob writers and
 *    readers do not depend on it.
 *    A handle that was already released, a pointer that never was a handle of this
 *    library, or a handle of another type (a cbl_view given for a cbl_collection) makes a
 *    call return 400 ("invalid handle", "handle is not a ..."); it does not crash. The
 *    release calls that return void ignore NULL and such handles (so releasing twice is
 *    harmless, and a handle of another type stays valid); cbl_db_close, cbl_db_delete and
 *    cbl_blob_writer_finish return 400 for them.
 *
 *  - Names. Every function is cbl_<object>_<verb or noun>, where <object> is what its
 *    first argument is: db for a cbl_db; collection, doc (a document of the collection)
 *    or local (a local document of it) for a cbl_collection; for every other handle its
 *    type without "cbl_" (view, query_result, live_query, blob_writer, blob_reader,
 *    listener_token, emitter, server, replicator). Three kinds of function take no handle
 *    of their object first, and only these:
 *      - the library's own: cbl_<verb or noun> (cbl_version, cbl_free, cbl_strdup,
 *        cbl_status_name, cbl_default_directory, ...) and cbl_log_<...> (logging);
 *      - calls on a database named by name and directory rather than by a handle:
 *        cbl_db_open, cbl_db_delete_named, cbl_db_exists_v2, cbl_db_list, cbl_db_copy;
 *      - constructors, cbl_<object>_start or _create, whose new handle is their
 *        out-parameter and whose first argument is what the handle is made from:
 *        cbl_server_start (a configuration), cbl_blob_writer_create (a cbl_db),
 *        cbl_live_query_start (a cbl_view), cbl_replicator_start (a cbl_collection).
 *    `make test-header` (Tests/c/check_header.py) checks every declaration against this
 *    rule. The seven names that broke it (cbl_revs_diff, cbl_docs_put_existing,
 *    cbl_docs_save, cbl_docs_bulk_get, cbl_changes_wait, cbl_emit, cbl_listener_remove)
 *    stay exported and working, each deprecated beside the same call under its rule name.
 *    A getter is named for what it returns, without "get":
 *    cbl_<object>_<noun>(object, ..., T* out_<noun>, err) returns a cbl_status and the
 *    value through its out-parameter (cbl_db_name, cbl_collection_count,
 *    cbl_server_port, cbl_view_info); a yes/no getter is
 *    cbl_<object>_is_<adjective>(object, ..., int* out_<adjective>, err), setting 0 or 1
 *    (cbl_query_result_is_stale, cbl_db_is_encrypted_v2); the matching setter is
 *    cbl_<object>_set_<noun>. "get" names only a read of an item picked by an argument,
 *    paired with put or set: a document, revision, local document, attachment or
 *    expiration by ID (cbl_doc_get, cbl_doc_get_expiration), a log domain's level. A
 *    value is returned directly only by calls that cannot fail (cbl_version,
 *    cbl_version_number, cbl_status_name, cbl_instance_count, cbl_log_get_level,
 *    cbl_strdup) and by two deprecated yes/no queries. New functions follow these
 *    rules. An exported signature never changes: when a function needs another one, the
 *    new form is added as <name>_v2 (as sqlite3.h does) and the old one stays, working.
 *    A deprecated function's comment says "Deprecated: use <replacement>" and its
 *    declaration carries CBL_DEPRECATED (see below), so that compilers warn where it is
 *    called.
 *
 *  - Threads. Every function may be called from any thread, on the same handle from
 *    several threads at once, unless its comment says otherwise. A transaction belongs to
 *    the thread that began it; other threads' writes to the same database wait for it
 *    (at most the busy timeout, then CBL_BUSY).
 *
 *  - Callbacks receive the `context` pointer given at registration as first argument.
 *    They are never called while the library holds one of its locks, so a callback may
 *    call back into the library (except where noted).
 *
 * Contents (the sections below, in this order; each opens with a banner comment):
 *    1. Library and errors     status codes, cbl_error, version, memory, handle count
 *    2. Logging                callback and levels per domain
 *    3. Databases              open, close, delete, transactions, encryption, maintenance
 *    4. Scopes and collections
 *    5. Documents and revisions  get, put, delete, update, history, expiration, validation
 *    6. Local documents        per-collection documents that are not replicated
 *    7. Attachments            content store, blob writers and readers
 *    8. Changes                changes feed, salvage, change listeners, notifications
 *    9. Views and queries      map/reduce views, query results, all-docs, live queries
 *   10. Replication surface    CouchDB's _revs_diff, _bulk_docs, open_revs, _bulk_get
 *   11. Replicator             replicating a collection with a CouchDB-protocol peer
 *   12. Server                 serving databases over HTTP(S) with CouchDB's REST API
 *   13. JavaScript             the limits of design documents' JavaScript (Duktape)
 *   14. Full-text search       full-text indexes (SQLite FTS5) and ranked searches
 *   15. Discovery              finding peers on the network (DNS-SD through Avahi)
 *
 * The header compiles as C99 and as C++.
 */
#ifndef CBLITE_H
#define CBLITE_H

#include <stddef.h>
#include <stdint.h>

/* The version of this header, the one place it is written (the Makefile, the library's
 * code and the Python package take it from here): CBLITE_VERSION as text,
 * CBLITE_VERSION_NUMBER as major * 10000 + minor * 100 + patch for #if. cbl_version()
 * and cbl_version_number() give the loaded library's, so a program can check at run time
 * that it runs with the library it was compiled for. */
#define CBLITE_VERSION        "0.1.0"
#define CBLITE_VERSION_NUMBER 100

/* CBL_WARN_UNUSED marks every call whose result must be looked at: each fallible call
 * (a cbl_status ignored is an error lost) and each call whose only effect is the value it
 * returns (cbl_strdup's ignored result is a leak). GCC and Clang then warn where a caller
 * drops it. To drop one on purpose write (void)!call(...): a plain (void) cast is enough
 * for Clang, C23 and C++17, not for GCC's attribute in older C. Define CBL_NO_WARN_UNUSED
 * before including this header to turn the warnings off.
 *
 * Nullability: no pointer here carries _Nonnull / _Nullable, on purpose. Every function
 * checks its pointer arguments and answers NULL with 400 (see Status), so a NULL from a
 * caller's bug is reported rather than being undefined behaviour, which a _Nonnull
 * parameter would make it (compilers may drop the check). The comments say which
 * arguments are optional and which return values can be NULL. */
#if defined(CBL_NO_WARN_UNUSED)
#  define CBL_WARN_UNUSED
#elif (defined(__cplusplus) && __cplusplus >= 201703L) || \
      (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 202311L)
#  define CBL_WARN_UNUSED [[nodiscard]]
#elif defined(__GNUC__) || defined(__clang__)
#  define CBL_WARN_UNUSED __attribute__((warn_unused_result))
#else
#  define CBL_WARN_UNUSED
#endif

/* CBL_DEPRECATED("use <replacement>") follows the declaration of every deprecated
 * function (those whose comment says "Deprecated: use ..."): GCC and Clang then warn
 * where one is called (-Wdeprecated-declarations), naming its replacement. Deprecated
 * functions stay exported and working: the warning only says where to switch. Define
 * CBL_NO_WARN_DEPRECATED before including this header to turn the warnings off (e.g. to
 * build old code with -Werror), or silence one call with
 * #pragma GCC diagnostic ignored "-Wdeprecated-declarations". */
#if defined(CBL_NO_WARN_DEPRECATED)
#  define CBL_DEPRECATED(message)
#elif defined(__GNUC__) || defined(__clang__)
#  define CBL_DEPRECATED(message) __attribute__((deprecated(message)))
#else
#  define CBL_DEPRECATED(message)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------ */
/* 1. Library and errors                                                                */
/* ------------------------------------------------------------------------------------ */

typedef int32_t cbl_status;

#define CBL_OK                   0   /* success */
#define CBL_BAD_REQUEST        400   /* invalid argument: NULL, bad UTF-8/JSON, bad name, invalid or closed handle */
#define CBL_UNAUTHORIZED       401   /* wrong or missing credentials / encryption key */
#define CBL_FORBIDDEN          403   /* rejected by a validation callback */
#define CBL_NOT_FOUND          404   /* no such database, collection, document or revision */
#define CBL_NOT_ACCEPTABLE     406   /* operation not possible in the current state (e.g. close with an open transaction) */
#define CBL_CONFLICT           409   /* revision conflict: base revision is not current, or the document exists */
#define CBL_PRECONDITION_FAILED 412  /* already exists (database, collection) */
#define CBL_INTERNAL_ERROR     500   /* storage failure or an unexpected condition */
#define CBL_NOT_IMPLEMENTED    501   /* feature not available in this build */
#define CBL_BUSY               503   /* the database stayed locked longer than the busy timeout */
#define CBL_INSUFFICIENT_STORAGE 507 /* disk or quota full (WebDAV's 507): nothing written, retry once space is freed */

#define CBL_ERROR_MESSAGE_SIZE 512

/* Values of cbl_error.detail that say the database file itself is unusable (with status
 * 500): SQLite's SQLITE_NOTADB (not a database, a damaged header, an empty or missing
 * file in an existing bundle) and SQLITE_CORRUPT (a damaged page: see
 * cbl_collection_salvage). Compare `detail & 0xFF`: SQLite may extend the code. */
#define CBL_DETAIL_NOT_A_DATABASE 26
#define CBL_DETAIL_CORRUPT        11
/* Values of cbl_error.detail (with status 400) when a design document is refused as it is
 * written, as CouchDB names the refusal: its shape (`invalid_design_doc`) or a view or filter
 * function that does not compile (`compilation_error`). Negative: no SQLite code. */
#define CBL_DETAIL_INVALID_DESIGN_DOC  (-4001)
#define CBL_DETAIL_COMPILATION_ERROR   (-4002)

/* Filled by fallible calls when non-NULL. Plain data: nothing to free. */
typedef struct cbl_error {
    cbl_status code;                        /* same value the call returned */
    int32_t    detail;                      /* underlying engine code (SQLite extended result code),
                                               a CBL_DETAIL_* value, or 0 */
    char       message[CBL_ERROR_MESSAGE_SIZE]; /* NUL-terminated, truncated if longer */
} cbl_error;


/* The library's version, e.g. "0.1.0" (CBLITE_VERSION of the header it was built with).
 * Static string: do not free. Thread-safe. */
CBL_WARN_UNUSED const char* cbl_version(void);

/* The library's version as a number, major * 10000 + minor * 100 + patch
 * (CBLITE_VERSION_NUMBER of the header it was built with). Thread-safe. */
CBL_WARN_UNUSED int32_t cbl_version_number(void);

/* The SQLite / SQLCipher versions compiled into the library, as JSON:
 * {"sqlite":"3.46.1","sqlcipher":"4.6.1 community"}. Caller frees *out_json with
 * cbl_free. Errors: 400 (out_json NULL). */
CBL_WARN_UNUSED cbl_status cbl_storage_versions(char** out_json, cbl_error* err);

/* Releases a string (or any buffer) returned by the library. NULL is ignored. */
void cbl_free(void* ptr);

/* Copies `str` into memory owned by the library's allocator. Used by callbacks that
 * hand a string to the library (see cbl_update_fn). Returns NULL if `str` is NULL or
 * memory is exhausted. The receiver frees it with cbl_free. */
CBL_WARN_UNUSED char* cbl_strdup(const char* str);

/* Number of live handles of every type (databases, collections, listener tokens, blob
 * writers and readers, views, query results, live queries) in this process.
 * Tests compare it before and after a piece of work to prove nothing leaks. */
CBL_WARN_UNUSED int64_t cbl_instance_count(void);

/* A short English name for a status code ("not found"). Static: do not free. */
CBL_WARN_UNUSED const char* cbl_status_name(cbl_status status);

/* ------------------------------------------------------------------------------------ */
/* 2. Logging                                                                           */
/* ------------------------------------------------------------------------------------ */

typedef enum cbl_log_domain {
    CBL_LOG_DATABASE = 0,   /* opening, closing, maintenance */
    CBL_LOG_STORAGE  = 1,   /* SQLite */
    CBL_LOG_CHANGES  = 2,   /* notifications */
    CBL_LOG_QUERY    = 3,
    CBL_LOG_REPLICATION = 4,
    CBL_LOG_LISTENER = 5,
    CBL_LOG_DOMAIN_COUNT = 6
} cbl_log_domain;

typedef enum cbl_log_level {
    CBL_LOG_DEBUG = 0, CBL_LOG_VERBOSE = 1, CBL_LOG_INFO = 2,
    CBL_LOG_WARNING = 3, CBL_LOG_ERROR = 4, CBL_LOG_NONE = 5
} cbl_log_level;

/* Receives every message at or above its domain's level. `message` is valid during the
 * call. May be called from any thread, including library threads; must not call
 * cbl_log_set_callback itself. */
typedef void (*cbl_log_fn)(void* context, cbl_log_domain domain, cbl_log_level level,
                           const char* message);

/* Installs (or with NULL removes) the log callback. Without one, messages at or above
 * their domain's level go to stderr. Returns when no call to the previous callback is
 * still running. Thread-safe. */
void cbl_log_set_callback(cbl_log_fn callback, void* context);

/* Sets the minimum level for one domain (default CBL_LOG_WARNING). Errors: 400 for an
 * unknown domain or level. Thread-safe. */
CBL_WARN_UNUSED cbl_status cbl_log_set_level(cbl_log_domain domain, cbl_log_level level, cbl_error* err);

/* The current level of a domain; CBL_LOG_NONE for an unknown domain. */
CBL_WARN_UNUSED cbl_log_level cbl_log_get_level(cbl_log_domain domain);

/* ------------------------------------------------------------------------------------ */
/* 3. Databases                                                                         */
/* ------------------------------------------------------------------------------------ */

/* An open database. Released by cbl_db_close or cbl_db_delete. */
typedef struct cbl_db cbl_db;

/* A database is a folder `<dir>/<name>.cblite2/` holding its SQLite file.
 *
 * Names: lowercase ASCII letters, digits and _$()+-/ only, starting with a letter,
 * shorter than 240 bytes ('/' becomes ':' on disk, so a name never reaches outside
 * `dir`); or "_replicator", CouchDB's database of replication documents (the listener
 * keeps its own there). Anything else is 400.
 *
 * `dir` may be NULL for the default directory: $CBLITE_DIR if set, otherwise
 * $XDG_DATA_HOME/cblite, otherwise $HOME/.local/share/cblite (created on demand). */

/* The default directory (see above). Caller frees *out_path. Errors: 400 (none of
 * CBLITE_DIR, XDG_DATA_HOME and HOME is set). */
CBL_WARN_UNUSED cbl_status cbl_default_directory(char** out_path, cbl_error* err);

/* Opens a database, creating it unless told not to.
 * options_json (optional, NULL = defaults), an object with:
 *   "create": bool (default true) — false: 404 when the database does not exist;
 *   "busy_timeout_ms": integer (default 10000) — how long a write waits for the lock
 *                       held by another handle or process before failing with 503;
 *   "encryption_key": {"password": "..."} or {"raw_hex": "<64 hex digits>"} — opens (or
 *                       creates) an encrypted database: SQLCipher, AES-256; a password is
 *                       stretched by SQLCipher's PBKDF2, a raw key is used as is.
 *                       A missing or wrong key fails with 401 and touches no file.
 *   "read_only": bool (default false) — writes nothing: every write through the handle
 *                       fails with 403, no expiration timer runs, and create is false.
 *                       A database in a read-only directory opens too (SQLite then
 *                       reads the file as immutable: a -wal file left there by a crashed
 *                       writer is not read). All handles of one database in a process
 *                       are read-only or all read-write: mixing is 406.
 * Several handles may be open on one database at once, in one process or several;
 * handles in one process share notifications.
 * Writes go to SQLite's write-ahead log; once it holds 1,000 pages, a thread of the
 * library (one per database file written in this process, running only while a copy is
 * asked for, stopped when the file's last handle closes) copies it back into the file,
 * so commits do not wait for that copy. A commit that finds 8,000 pages still waiting
 * (writes outrunning the copy) copies them itself: the log stays bounded.
 * Reads that come in a run (less than 10 ms apart) keep the log's read lock between
 * them while no other process has the database open: one more library thread, per
 * process, releases it once reads stop for 10-20 ms or another process opens the
 * database (which waits for it at most that long). No thread of the library runs for a
 * database without work for it: a single-threaded program that stops reading and
 * writing is single-threaded again.
 * Errors: 400 (bad name or options; dir is ""), 404 (absent, or dir missing, and
 * create=false or read_only), 401 (encrypted and no key or a wrong one given, or a key
 * given for a plain database), 406 (open in this process with the other read_only
 * setting), 503 (locked), 500 (I/O; dir cannot be created), 403 (dir cannot be created:
 * a read-only file system or no permission), 500 with detail
 * CBL_DETAIL_NOT_A_DATABASE (not a database, or one whose header is damaged — told
 * apart from an encrypted one by the file's bytes; also an existing bundle whose
 * database file is empty or missing: never silently replaced by a new database). */
CBL_WARN_UNUSED cbl_status cbl_db_open(const char* name, const char* dir, const char* options_json,
                       cbl_db** out_db, cbl_error* err);

/* Closes and releases the handle: stops its expiration timer and removes nothing else.
 * Listener tokens of this handle stay valid to remove (removing them is harmless).
 * Errors: 406 while this handle has a transaction open (the handle stays open), 400
 * invalid handle. */
CBL_WARN_UNUSED cbl_status cbl_db_close(cbl_db* db, cbl_error* err);

/* Closes and releases the handle, then deletes the database's files.
 * Errors: 406 (this handle has a transaction open), 503 (another handle in this process
 * still has the database open — close those first), 400 (invalid handle), 500 (a file
 * could not be removed).
 * 406 and 503 are found before anything is done: the handle stays open and usable and
 * no file is touched. 500 comes after the close: the handle is closed and released
 * (calls on it return 400, as after cbl_db_close) and the database may be left partly
 * deleted; cbl_db_delete_named removes the rest. So after any failure but 406 and 503
 * the handle is gone. */
CBL_WARN_UNUSED cbl_status cbl_db_delete(cbl_db* db, cbl_error* err);

/* Deletes a database that is not open in this process. Errors: 400 (bad name; no
 * default directory), 404 (absent; dir missing), 503 (open in this process), 500 (a file
 * could not be removed). */
CBL_WARN_UNUSED cbl_status cbl_db_delete_named(const char* name, const char* dir, cbl_error* err);

/* Sets *out_exists to 1 when the database `name` exists in `dir` (NULL = default), else
 * 0 — also when `dir` does not exist. It looks for the database's file and opens
 * nothing, so an encrypted database counts without its key. Thread-safe.
 * Errors: 400 (name NULL or not a valid database name, dir empty, dir NULL and no
 * default directory, NULL out_exists). */
CBL_WARN_UNUSED cbl_status cbl_db_exists_v2(const char* name, const char* dir, int* out_exists,
                            cbl_error* err);

/* Deprecated: use cbl_db_exists_v2, which reports an invalid name instead of answering 0.
 * Kept for compatibility: 1 when the database exists in `dir` (NULL = default), 0 when
 * not, and also 0 when the name is invalid or NULL or there is no default directory. */
CBL_WARN_UNUSED int cbl_db_exists(const char* name, const char* dir)
    CBL_DEPRECATED("use cbl_db_exists_v2");

/* The names of the databases in `dir` (NULL = default), as a sorted JSON array of
 * strings ("[]" when `dir` does not exist). Caller frees. Errors: 400 (dir empty; dir
 * NULL and no default directory), 500 (dir cannot be read). */
CBL_WARN_UNUSED cbl_status cbl_db_list(const char* dir, char** out_json, cbl_error* err);

/* Installs a prebuilt database: copies the bundle folder `source_path` (a
 * `.cblite2` folder, e.g. shipped with an app) into `dir` under `name`. Errors: 400,
 * 404 (source missing or not a database), 412 (a database `name` exists already),
 * 500 (I/O; nothing is left half-copied). */
CBL_WARN_UNUSED cbl_status cbl_db_copy(const char* source_path, const char* name, const char* dir,
                       cbl_error* err);

/* The database's name / bundle folder path. Caller frees. Errors: 400. */
CBL_WARN_UNUSED cbl_status cbl_db_name(cbl_db* db, char** out_name, cbl_error* err);
CBL_WARN_UNUSED cbl_status cbl_db_path(cbl_db* db, char** out_path, cbl_error* err);

/* Number of (undeleted) documents / last sequence of the default collection.
 * Errors: 400, 500. */
CBL_WARN_UNUSED cbl_status cbl_db_count(cbl_db* db, uint64_t* out_count, cbl_error* err);
CBL_WARN_UNUSED cbl_status cbl_db_last_sequence(cbl_db* db, uint64_t* out_sequence, cbl_error* err);

/* How many ancestors of each leaf revision are kept (default 20, at least 1). Stored in
 * the database; applies to every later save. Errors: 400 (set: 0 or > 100000), 503
 * (set), 500. */
CBL_WARN_UNUSED cbl_status cbl_db_max_rev_tree_depth(cbl_db* db, uint32_t* out_depth, cbl_error* err);
CBL_WARN_UNUSED cbl_status cbl_db_set_max_rev_tree_depth(cbl_db* db, uint32_t depth, cbl_error* err);

/* The database's `_security` object, as CouchDB keeps one and the listener enforces it:
 * {"admins": {"names": [...], "roles": [...]}, "members": {"names": [...], "roles": [...]}}.
 * Database admins (by name or role) may write design documents and the object itself;
 * members may read and write documents; when `members` names nobody and no role, every
 * user is a member; a server admin (role "_admin") is both, always. One object for all the
 * database's collections. cbl_db_security gives the object as stored (its members in
 * their order, unknown ones kept), or "null" when none was ever set (the listener then
 * applies its `[couchdb] default_security`). Caller frees *out_json. Errors: 400 (closed,
 * out_json NULL), 500.
 * cbl_db_set_security replaces it: `json` is an object whose `admins` and `members`
 * (each optional; `readers` stands for `members`, CouchDB 1.x's name) are objects whose
 * `names` and `roles` (each optional) are arrays of strings. Errors: 400 (not JSON, not
 * that shape), 503 (busy), 500. Thread-safe. */
CBL_WARN_UNUSED cbl_status cbl_db_security(cbl_db* db, char** out_json, cbl_error* err);
CBL_WARN_UNUSED cbl_status cbl_db_set_security(cbl_db* db, const char* json, cbl_error* err);

/* Transactions. Begin and end on the same thread; nested begins fold into the outermost
 * (only the outermost commit writes). abort rolls everything back, notifications
 * included, and ends the whole nesting. Errors: 406 (commit/abort without begin, or from
 * another thread), 503 (lock not obtained within the busy timeout), 400, 500.
 *
 * Attachment content stored inside the transaction (cbl_db_blob_put,
 * cbl_db_blob_import_file, cbl_blob_writer_finish, inline "data") is made durable by
 * the outermost commit, all of it at once, BEFORE the documents are committed: the
 * commit syncs the new files (one fdatasync each; from 16 files on, one syncfs() of the
 * file system instead, which also writes back other files' pending data but flushes the
 * disk's cache once), moves them to their final names and syncs the attachment folder,
 * then commits. If any of that fails the commit fails with 500 and the whole
 * transaction is rolled back (nothing is committed, the new content is discarded). So
 * a committed document never names content that a crash or power loss could lose or
 * tear. abort (or a failed commit) discards content stored in the transaction; content
 * that was already in the store stays. See "Attachments" below for when stored content
 * is durable. */
CBL_WARN_UNUSED cbl_status cbl_db_begin(cbl_db* db, cbl_error* err);
CBL_WARN_UNUSED cbl_status cbl_db_commit(cbl_db* db, cbl_error* err);
CBL_WARN_UNUSED cbl_status cbl_db_abort(cbl_db* db, cbl_error* err);

/* Runs `body` inside a transaction: it returns nonzero to commit, 0 to abort.
 * Returns CBL_OK when committed, 409 when the body asked for abort, or the error of
 * the begin or the commit. Errors: 400 (NULL body), 409 (aborted by the body), 503
 * (lock not obtained), 500. */
typedef int (*cbl_transaction_fn)(void* context);
CBL_WARN_UNUSED cbl_status cbl_db_in_transaction(cbl_db* db, cbl_transaction_fn body, void* context,
                                 cbl_error* err);

/* Changes the encryption key: key_json is {"password": ...} or {"raw_hex": ...} as in
 * cbl_db_open's options, or NULL to remove encryption (on a plain database a key adds
 * it). Every document (and attachment) is re-written under the new key into a new file
 * that atomically replaces the old one; afterwards only the new key (or none) opens the
 * database. All handles of this process follow the change; no other process may have the
 * database open meanwhile. The key never appears in logs or messages.
 * Errors: 400 (bad key JSON), 406 (inside a transaction), 503, 500. */
CBL_WARN_UNUSED cbl_status cbl_db_change_encryption_key(cbl_db* db, const char* key_json, cbl_error* err);

/* Sets *out_encrypted to 1 when the database is encrypted (opened with a key), else 0.
 * Errors: 400. */
CBL_WARN_UNUSED cbl_status cbl_db_is_encrypted_v2(cbl_db* db, int* out_encrypted, cbl_error* err);

/* Deprecated: use cbl_db_is_encrypted_v2, which reports an invalid handle instead of
 * answering 0. Kept for compatibility: 1 when the database is encrypted, 0 when not and
 * also for NULL, invalid and closed handles. */
CBL_WARN_UNUSED int cbl_db_is_encrypted(cbl_db* db) CBL_DEPRECATED("use cbl_db_is_encrypted_v2");

/* Maintenance. compact: drops bodies of non-leaf revisions, purges expired documents,
 * deletes attachment files no kept revision refers to (including content stored but
 * never attached), and shrinks the file (VACUUM). optimize: refreshes the query
 * planner's statistics. integrity_check: SQLite's check plus the engine's own (revision
 * trees, sequences); CBL_OK when sound, 500 with the first problem in the message
 * otherwise; when out_report (optional) is given it receives a JSON array of every
 * problem found, on success ("[]") and on 500 alike (the one out-parameter also set on
 * failure).
 * Errors: compact: 400, 406 (inside a transaction of this thread), 503, 500.
 * optimize: 400, 503 (another thread's transaction held the lock past the busy
 * timeout), 500; inside a transaction of this thread it runs as part of it.
 * integrity_check: 400, 500 (problems found, or a storage failure while checking). */
CBL_WARN_UNUSED cbl_status cbl_db_compact(cbl_db* db, cbl_error* err);
CBL_WARN_UNUSED cbl_status cbl_db_optimize(cbl_db* db, cbl_error* err);
CBL_WARN_UNUSED cbl_status cbl_db_integrity_check(cbl_db* db, char** out_report, cbl_error* err);

/* ------------------------------------------------------------------------------------ */
/* 4. Scopes and collections                                                            */
/* ------------------------------------------------------------------------------------ */

/* A collection of a database. Released by cbl_collection_release. It keeps no lock; it
 * fails with 400 once its database handle is closed, and with 404 once the collection
 * has been deleted.
 *
 * Scope and collection names: 1–251 bytes of ASCII letters, digits, '_', '-' and '%',
 * not starting with '_' or '%', except the default names "_default". NULL for a scope
 * means "_default". */
typedef struct cbl_collection cbl_collection;

#define CBL_DEFAULT_SCOPE      "_default"
#define CBL_DEFAULT_COLLECTION "_default"

/* The default collection (always exists). Errors: 400. */
CBL_WARN_UNUSED cbl_status cbl_db_default_collection(cbl_db* db, cbl_collection** out, cbl_error* err);

/* Opens an existing collection. Errors: 400 (scope or collection name), 404 (absent),
 * 500. */
CBL_WARN_UNUSED cbl_status cbl_db_collection(cbl_db* db, const char* scope, const char* name,
                             cbl_collection** out, cbl_error* err);

/* Opens a collection, creating it (and its scope) when absent. Errors: 400 (scope or
 * collection name), 503, 500. */
CBL_WARN_UNUSED cbl_status cbl_db_create_collection(cbl_db* db, const char* scope, const char* name,
                                    cbl_collection** out, cbl_error* err);

/* Deletes a collection with all its documents. Open handles to it then fail with 404.
 * Errors: 400 (scope or collection name), 403 (the default collection), 404 (absent),
 * 503, 500. */
CBL_WARN_UNUSED cbl_status cbl_db_delete_collection(cbl_db* db, const char* scope, const char* name,
                                    cbl_error* err);

/* Sorted JSON array of scope names that hold at least one collection ("_default"
 * always). Caller frees. Errors: 400, 500. */
CBL_WARN_UNUSED cbl_status cbl_db_scope_names(cbl_db* db, char** out_json, cbl_error* err);

/* Sorted JSON array of the collection names of a scope (NULL: "_default"). Caller
 * frees. Errors: 400 (scope name), 404 (no collection in that scope), 500. */
CBL_WARN_UNUSED cbl_status cbl_db_collection_names(cbl_db* db, const char* scope, char** out_json,
                                   cbl_error* err);

/* Releases a collection handle. NULL and invalid handles are ignored. */
void cbl_collection_release(cbl_collection* coll);

/* Its name / scope name. Caller frees. They answer for a deleted collection and after
 * the database handle closed too. Errors: 400 (NULL out-parameter, invalid handle). */
CBL_WARN_UNUSED cbl_status cbl_collection_name(cbl_collection* coll, char** out_name, cbl_error* err);
CBL_WARN_UNUSED cbl_status cbl_collection_scope(cbl_collection* coll, char** out_scope, cbl_error* err);

/* Number of undeleted documents; last sequence assigned in this collection.
 * Errors: 400, 404, 500. */
CBL_WARN_UNUSED cbl_status cbl_collection_count(cbl_collection* coll, uint64_t* out_count, cbl_error* err);
CBL_WARN_UNUSED cbl_status cbl_collection_last_sequence(cbl_collection* coll, uint64_t* out_sequence,
                                        cbl_error* err);

/* ------------------------------------------------------------------------------------ */
/* 5. Documents and revisions                                                           */
/* ------------------------------------------------------------------------------------ */

/* Documents are JSON objects. Properties starting with '_' are metadata:
 *   "_id"      — the document ID (in output; in input it must match the given ID),
 *   "_rev"     — the revision ID (in output; in input it names the parent revision),
 *   "_deleted" — true marks a tombstone (which may carry other properties),
 *   "_attachments" — attachment stubs (see "Attachments" below for the rules).
 *   "_replication_state", "_replication_state_time", "_replication_state_reason",
 *   "_replication_id", "_replication_stats" — kept as content (CouchDB's `_replicator`
 *   documents carry them).
 * Any other top-level '_' property is rejected with 400.
 *
 * JSON (documents and every JSON argument) may nest arrays and objects up to
 * CBL_MAX_JSON_DEPTH levels (the document object is the first); deeper is a 400 "nesting
 * deeper than 1000", and nothing is stored. CouchDB has no limit of its own: this one is
 * far beyond what data nests (Python's json module gives up near 1,000 levels), and
 * every part of the library handles it within the stack a thread gets by default.
 *
 * Document IDs: 1–1024 bytes of UTF-8 without control characters, not starting with
 * '_' — except design documents, "_design/NAME" (CouchDB's reserved IDs), which are
 * ordinary documents here: saved, read, deleted, revised and replicated like any other,
 * listed by the all-documents query and in the changes feed. Their JavaScript runs:
 * views (section 9), filters, and validate_doc_update (section 5, Validation). Local documents ("_local/ID" over HTTP) are apart:
 * cbl_local_*.
 *
 * Revision IDs made here are "<generation>-<40 hex digits>": the SHA-1 digest covers
 * the parent revision ID, the deletion flag and the canonical JSON of the body (keys
 * sorted by UTF-8 bytes, no insignificant whitespace, integral numbers without a
 * fraction; attachment stubs without what the library derives for CouchDB peers: "md5"
 * and the gzip form), so the same change made on two databases gets the same revision ID.
 * Revision IDs from elsewhere (cbl_doc_put_existing, parents) may carry any digest of
 * 1–128 printable ASCII characters without spaces; the generation is 1–999999999.
 *
 * Conflicts: the current (winning) revision is the undeleted leaf of highest
 * generation, else (all leaves deleted) the deleted leaf of highest generation; ties go
 * to the revision ID that sorts higher in CouchDB's order, so CouchDB, PouchDB and every
 * cblite peer pick the same winner: the digests compared byte by byte (a prefix first),
 * a digest of exactly 32 hex digits (CouchDB's) as the 16 bytes it encodes, any other
 * (ours among them) as its ASCII text. A database written by cblite before this rule
 * has its stored winners re-evaluated once, by its first writable open.
 *
 * Numbers: an integer is kept exactly whatever its size (one beyond 64 bits as its
 * digits, as CouchDB keeps it), so bodies replicate with every digit; a number with a
 * fraction or an exponent is a double (as in CouchDB). */

#define CBL_MAX_JSON_DEPTH 1000

/* Flags for cbl_doc_get / cbl_doc_get_revision. */
#define CBL_GET_DELETED    0x01u  /* return a deleted document (tombstone) instead of 404 */
#define CBL_GET_CONFLICTS  0x02u  /* add "_conflicts": the other undeleted leaf revision IDs */
#define CBL_GET_REVISIONS  0x04u  /* add "_revisions": {"start": gen, "ids": [digests, newest first]} */
#define CBL_GET_LOCAL_SEQ  0x08u  /* add "_local_seq": the document's sequence */

/* Reads the current revision as JSON, with "_id" and "_rev" (and "_deleted":true for a
 * tombstone). Caller frees *out_json. Errors: 400 (document ID), 404 (absent, purged,
 * or deleted without CBL_GET_DELETED), 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_get(cbl_collection* coll, const char* doc_id, uint32_t flags,
                       char** out_json, cbl_error* err);

/* Reads a given revision (any kept revision, not only leaves). Errors: 400 (document
 * or revision ID), 404 (no such document; the revision is unknown or its body was
 * dropped by compaction or pruning), 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_get_revision(cbl_collection* coll, const char* doc_id,
                                const char* rev_id, uint32_t flags, char** out_json,
                                cbl_error* err);

/* Flags for cbl_doc_put. */
#define CBL_PUT_ALLOW_CONFLICT 0x01u  /* parent may be any kept revision, not only the current one: creates a branch */

/* Saves a new revision.
 *   doc_id: the ID, or NULL to use body's "_id", or a new UUID when neither is given.
 *   body_json: a JSON object (see metadata rules above). "_rev" in it is the parent
 *              revision when parent_rev_id is NULL.
 *   parent_rev_id: the revision this one replaces; NULL to create a new document.
 * out_doc_id, out_rev_id (optional): the document and new revision IDs; caller frees.
 * Errors: 400 (bad ID/JSON/metadata), 409 (creating an existing document, or the parent
 * is not the current revision — unless CBL_PUT_ALLOW_CONFLICT), 404 (parent unknown),
 * 403 (rejected by a validator; its message), 412 (an attachment stub names content the
 * store does not have; see Attachments), 503, 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_put(cbl_collection* coll, const char* doc_id, const char* body_json,
                       const char* parent_rev_id, uint32_t flags, char** out_doc_id,
                       char** out_rev_id, cbl_error* err);

/* Deletes a document by writing a tombstone revision on `parent_rev_id` (NULL: the
 * current revision). Any undeleted leaf may be named: deleting the losing leaves of a
 * conflict resolves it. out_rev_id (optional) receives the tombstone's ID. Errors: 404
 * (absent, already deleted, or the named leaf is a tombstone), 409 (the named revision
 * is unknown or not a leaf), 403 (validator), 400 (document or revision ID), 503,
 * 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_delete(cbl_collection* coll, const char* doc_id,
                          const char* parent_rev_id, char** out_rev_id, cbl_error* err);

/* Update callback for cbl_doc_update: receives the current revision's JSON (with "_id"
 * and "_rev"; NULL when the document does not exist or is deleted), and sets
 * *out_new_json to the new body, allocated with cbl_strdup (the library frees it).
 * Returns nonzero to save, 0 to cancel. It may be called several times. */
typedef int (*cbl_update_fn)(void* context, const char* current_json, char** out_new_json);

/* Read-modify-write: calls `update` with the current revision and saves its result on
 * that revision; when another writer got there first (409), reads again and calls
 * `update` again, until it succeeds (at most 1000 attempts, then 409). Returns CBL_OK
 * with *out_rev_id (optional) set, or 409 with *out_rev_id NULL when the callback
 * cancelled ("update cancelled"). Errors: as cbl_doc_put, and 400 (NULL update; the
 * callback asked to save but gave NULL or invalid JSON), 409 (cancelled, or still
 * conflicting after 1000 attempts). */
CBL_WARN_UNUSED cbl_status cbl_doc_update(cbl_collection* coll, const char* doc_id, cbl_update_fn update,
                          void* context, char** out_rev_id, cbl_error* err);

/* Removes every trace of a document: all revisions, its sequence and expiration. It
 * does not appear in the changes feed afterwards. Errors: 404 (absent), 400 (document
 * ID), 503, 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_purge(cbl_collection* coll, const char* doc_id, cbl_error* err);

/* The undeleted leaf revisions (the current one first, then the losing conflicts), as a
 * JSON array of revision IDs; "[]" for a deleted document. Errors: 404 (absent or
 * purged), 400 (document ID), 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_conflicts(cbl_collection* coll, const char* doc_id, char** out_json,
                             cbl_error* err);

/* The ancestry of a revision (NULL: the current one), newest first, as a JSON array of
 * revision IDs; the second element is the parent. Ancestors pruned by maxRevTreeDepth
 * are not listed. Errors: 404 (no such document or revision), 400 (document or
 * revision ID), 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_history(cbl_collection* coll, const char* doc_id, const char* rev_id,
                           char** out_json, cbl_error* err);

/* The whole kept revision tree, as JSON:
 * {"id":..,"current":rev,"sequence":n,"revisions":[{"rev":..,"parent":rev|null,
 *  "deleted":bool,"leaf":bool,"has_body":bool,"current":bool}, ...]} newest first.
 * Errors: 404 (absent or purged), 400 (document ID), 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_revision_tree(cbl_collection* coll, const char* doc_id, char** out_json,
                                 cbl_error* err);

/* Inserts a revision that was made elsewhere, with its history, without inventing
 * revision IDs (the replicator's path). history_json: JSON array of revision IDs, the
 * new revision first, then its parent, grandparent, ... (as far as known). Ancestors
 * missing here are added without bodies; an already known revision is a no-op (CBL_OK).
 * The result may be a conflict. The change is reported to listeners as external.
 * Errors: 400 (bad document ID or body; bad history: not descending generations, bad
 * IDs, "_rev" in the body not its first entry), 403 (validator), 404, 412 (an
 * attachment stub names content the store does not have), 503, 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_put_existing(cbl_collection* coll, const char* doc_id,
                                const char* body_json, const char* history_json,
                                cbl_error* err);

/* Expiration (time to live). `unix_time` is seconds since 1970-01-01 UTC; 0 clears it.
 * An expired document is purged on open, and automatically while a handle of its
 * database is open in a process that knows of the expiration: the process that set it,
 * one that opened the database after it was set, or one whose change listeners watch the
 * database when another process sets it. A thread per database file runs only while such
 * an expiration is pending. Errors: 404 (no such document), 400 (document ID, a negative time),
 * 503, 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_set_expiration(cbl_collection* coll, const char* doc_id, int64_t unix_time,
                                  cbl_error* err);
/* *out_unix_time is 0 when no expiration is set. Errors: 404 (no such document), 400
 * (document ID), 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_get_expiration(cbl_collection* coll, const char* doc_id,
                                  int64_t* out_unix_time, cbl_error* err);

/* Validation. A validator sees every new revision saved through any handle of this
 * database in this process (cbl_doc_put, delete, update, put_existing) before it is
 * stored, and returns nonzero to accept or 0 to reject; on reject the save fails with 403
 * and the message written into `message` (at most message_size bytes, NUL-terminated;
 * left empty: "rejected by validator <name>").
 * new_json: the new revision with "_id", "_rev" (and "_deleted"); current_json: the
 * revision it replaces, or NULL. Called inside the writing transaction: it may read
 * through the library but should not write. */
typedef int (*cbl_validate_fn)(void* context, const char* new_json, const char* current_json,
                               char* message, size_t message_size);

/* Registers `validate` under `name` for this collection (replacing a validator of the
 * same name); NULL removes it, returning once no call to it is running. Errors: 400
 * (empty name), 404. */
CBL_WARN_UNUSED cbl_status cbl_collection_set_validator(cbl_collection* coll, const char* name,
                                        cbl_validate_fn validate, void* context,
                                        cbl_error* err);

/* Design documents' validate_doc_update(newDoc, oldDoc, userCtx, secObj). Every stored
 * design document of the collection with a JavaScript "validate_doc_update" sees each new
 * revision of the collection's other documents on every write path (cbl_doc_put, delete,
 * update, put_existing and replication), after the validators above, as CouchDB runs it:
 * - newDoc: the revision with "_id", "_rev", "_revisions" (and "_deleted": true);
 *   oldDoc: the revision it replaces, null for a new document or one re-created on a
 *   tombstone (a replicated revision: its nearest ancestor stored here, else null);
 * - userCtx: the library's writes are the local user
 *       {"db": DATABASE_NAME, "name": null, "roles": ["_admin"]}
 *   (the listener passes its request's user instead, "db" being the URL's name);
 * - secObj: the database's stored security object ({} when none);
 * - throw({forbidden: msg}) fails the write with 403 and msg as the message,
 *   throw({unauthorized: msg}) with 401; any other throw, a function that does not
 *   compile, or the time or memory limit (cbl_js_set_limits) fails it with 500.
 * Design documents themselves are not validated by them (CouchDB lets only admins write
 * them). In a batch (replication, _bulk_docs) a refusal fails that document alone. Which
 * design documents have one is kept per collection and re-read when one is written in
 * this process; another process's design-document change is seen once the database is
 * reopened. */

/* ------------------------------------------------------------------------------------ */
/* 6. Local documents (not replicated, no revision history)                             */
/* ------------------------------------------------------------------------------------ */

/* Local documents live beside a collection's documents under their own IDs (1–1024
 * bytes without control characters), are never in the changes feed and keep only their
 * current body and a revision "0-<n>".
 * get: JSON with "_id" and "_rev". Errors: 400 (ID), 404 (absent), 500.
 * put: body_json is an object whose only '_' properties are "_id" (must equal local_id)
 * and "_rev" (the parent when parent_rev_id is NULL); the parent must be the current
 * revision (NULL to create). *out_rev_id (optional): the new revision; caller frees.
 * Errors: 400 (ID, JSON, reserved property, malformed revision), 404, 409 (the parent
 * is not current, names an absent document, or is missing for an existing one), 503,
 * 500.
 * delete: parent_rev_id NULL deletes whatever revision is current. Errors: 400 (ID,
 * malformed revision), 404 (absent), 409 (parent not current), 503, 500. */
CBL_WARN_UNUSED cbl_status cbl_local_get(cbl_collection* coll, const char* local_id, char** out_json,
                         cbl_error* err);
CBL_WARN_UNUSED cbl_status cbl_local_put(cbl_collection* coll, const char* local_id, const char* body_json,
                         const char* parent_rev_id, char** out_rev_id, cbl_error* err);
CBL_WARN_UNUSED cbl_status cbl_local_delete(cbl_collection* coll, const char* local_id,
                            const char* parent_rev_id, cbl_error* err);

/* Lists the collection's local documents by ID, as JSON:
 * [{"id": local_id, "rev": "0-<n>", "doc": {...}?}, ...] ("doc" with include_docs != 0).
 * Caller frees *out_json. Errors: 400, 404, 500. Thread-safe. */
CBL_WARN_UNUSED cbl_status cbl_local_list(cbl_collection* coll, int include_docs, char** out_json,
                          cbl_error* err);

/* ------------------------------------------------------------------------------------ */
/* 7. Attachments                                                                       */
/* ------------------------------------------------------------------------------------ */

/* A revision may carry named attachments: binary content stored beside the database
 * (files in `<bundle>/attachments/`), not in the JSON. The JSON carries metadata stubs:
 *
 *   "_attachments": {"photo.jpg": {"content_type": "image/jpeg",
 *                                  "digest": "sha1-<base64 of the SHA-1 of the content>",
 *                                  "length": 1234, "md5": "md5-<base64 of its MD5>",
 *                                  "revpos": 2, "stub": true}}
 *
 * "digest" is the content's address here. "md5" is CouchDB's digest of it, kept beside
 * (the listener and the replicator show it to CouchDB peers as their "digest"); stubs
 * written before it was kept lack it. A database served by the listener also keeps a
 * gzip form of CouchDB's compressible types ("encoding": "gzip", "encoded_length",
 * "encoded_digest": that form's own stored content; "md5" is then of that form, as
 * CouchDB's). All of these are set by the library; reads here always give the content.
 *
 * Content is addressed by its digest, so equal content is stored once whatever the
 * number of documents and names that refer to it. It is written to a temporary file and
 * becomes visible only once complete, synced and verified; a crash mid-write leaves
 * nothing visible (the next open or cbl_db_compact deletes the leftover).
 *
 * Durability of stored content (cbl_db_blob_put, cbl_db_blob_import_file,
 * cbl_blob_writer_finish, inline "data" of a save):
 *  - called OUTSIDE a transaction: the content is durable when the call returns (its
 *    file and the folder entry are synced: two fsyncs per new content).
 *  - called by the thread that has a transaction open (cbl_db_begin): the file is
 *    written and verified, and the syncs are deferred to the transaction's commit,
 *    which syncs all the transaction's new content together before it commits the
 *    documents (see cbl_db_begin/cbl_db_commit). Until then the content is readable,
 *    attachable and its length known by that thread (the call returns its digest as
 *    usual); other threads and processes see it only after the commit. If the
 *    transaction is aborted, or the process dies before the commit, the content is
 *    discarded (it was never durable); put it again in a later transaction.
 *  - content already stored (the same digest) is not written again: it is durable
 *    (unless its file does not have the size that content needs, e.g. it was cut short
 *    behind the library's back: then it is written again, as new content).
 * In every case a committed document names only durable content, and a file under a
 * digest's name is always complete: a crash never leaves torn content that a later put
 * of the same bytes would trust.
 *
 * Saving a revision (cbl_doc_put, cbl_doc_update, cbl_doc_put_existing) with
 * "_attachments":
 *  - each entry names stored content by "digest" (a stub, e.g. as read back), or carries
 *    it inline as "data" (base64; convenient for small content) which is stored first.
 *    Inline data is never returned: reads show stubs only.
 *  - content the store does not have fails with 412 ("attachment content missing"): a
 *    revision never refers to missing content. A given "length" must match (400).
 *  - "content_type" defaults to the previous revision's type for that name, else
 *    "application/octet-stream". "revpos" is set by the library: the generation where
 *    the content first appeared under that name on this branch (cbl_doc_put_existing
 *    keeps a given revpos from 1 to the revision's generation).
 *  - CouchDB's stub forms: {"stub": true} alone, or with CouchDB's "md5-…" digest,
 *    names the parent revision's attachment of that name (and revpos, when given);
 *    412 "Invalid attachment stub in <doc> for <name>" when it has none.
 *  - accepted entry properties: content_type, digest, length, revpos, stub, data, and
 *    md5, encoding, encoded_length (ignored: what reads show); anything else is 400.
 *  - a body WITHOUT an "_attachments" key keeps the parent revision's attachments as they
 *    are (a body-only update copies no data); "_attachments": {} removes them all. A
 *    deletion (tombstone) keeps none.
 *
 * Names: 1–255 bytes of UTF-8 without control characters (NUL included), not starting
 * with '_' (reserved, as in CouchDB); they are JSON
 * keys only and never become file paths ("../x" is just a name). Content types:
 * "type/subtype" (MIME tokens), optionally with "; name=value" parameters, at most 255
 * bytes. Anything else is 400.
 *
 * Storage is reclaimed by cbl_db_compact: it deletes attachment content that no kept
 * revision refers to — after an update replaced it or a removal dropped it (once
 * compaction dropped the old revision's body), after a purge or an expiration, and
 * content put into the store (cbl_db_blob_put, writers) that was never attached. So
 * attach stored content before the next compaction; afterwards saving a stub for it
 * fails with 412.
 *
 * Digests in and out are "sha1-<base64>" strings. */

/* Streams content into the store in chunks (constant memory whatever the size).
 * Released by cbl_blob_writer_finish or cbl_blob_writer_cancel. Calls on one writer are
 * serialized; it does not depend on its database handle staying open. */
typedef struct cbl_blob_writer cbl_blob_writer;

/* Begins writing content into the store of `db`. Errors: 400, 500 (I/O). */
CBL_WARN_UNUSED cbl_status cbl_blob_writer_create(cbl_db* db, cbl_blob_writer** out_writer, cbl_error* err);

/* Appends `length` bytes (`data` may be NULL when length is 0). After a failure the
 * writer keeps its handle but is unusable: cancel it. Errors: 400 (invalid handle, NULL
 * data with length > 0, writer failed), 500 (I/O, e.g. disk full). */
CBL_WARN_UNUSED cbl_status cbl_blob_writer_write(cbl_blob_writer* writer, const void* data, size_t length,
                                 cbl_error* err);

/* Completes the content, verifies it, makes it visible in the store, and RELEASES the
 * writer (on failure too). *out_digest (optional) receives its digest; caller frees.
 * Durable when it returns, or, called inside a transaction, at its commit (see
 * "Durability of stored content" above). Errors: 400 (invalid handle), 500 (I/O;
 * nothing becomes visible). */
CBL_WARN_UNUSED cbl_status cbl_blob_writer_finish(cbl_blob_writer* writer, char** out_digest, cbl_error* err);

/* Abandons the content (nothing becomes visible) and releases the writer. NULL and
 * invalid handles are ignored. */
void cbl_blob_writer_cancel(cbl_blob_writer* writer);

/* Stores `length` bytes from memory (`data` may be NULL when length is 0).
 * *out_digest (optional) receives the digest; caller frees. Durable when it returns;
 * called inside a transaction, durable at its commit, which syncs all the transaction's
 * new content at once (see "Durability of stored content" above). Errors: 400, 500. */
CBL_WARN_UNUSED cbl_status cbl_db_blob_put(cbl_db* db, const void* data, size_t length, char** out_digest,
                           cbl_error* err);

/* Stores a copy of the regular file at `path`, streamed (constant memory). *out_digest
 * (optional) receives the digest; caller frees. Errors: 400 (not a regular file,
 * unreadable), 404 (no such file), 500. */
CBL_WARN_UNUSED cbl_status cbl_db_blob_import_file(cbl_db* db, const char* path, char** out_digest,
                                   cbl_error* err);

/* The length in bytes of stored content `digest`. Errors: 400 (malformed digest), 404
 * (the store does not have it). */
CBL_WARN_UNUSED cbl_status cbl_db_blob_length(cbl_db* db, const char* digest, uint64_t* out_length,
                              cbl_error* err);

/* Sets (adds or replaces) attachment `name` of a document to stored content `digest`,
 * saving a new revision whose body is the current one with the changed stub.
 * parent_rev_id: the current revision; NULL creates the document (an empty body with
 * this attachment) when it does not exist or is deleted. content_type: NULL keeps the previous type of that name, else
 * "application/octet-stream". *out_rev_id (optional) receives the new revision ID;
 * caller frees. Validators and listeners see an ordinary save.
 * Errors: 400 (doc ID, name, type, digest), 404 (document absent while a parent is
 * given), 409 (parent not current; NULL parent while the document exists), 412 (content
 * not in the store), 403 (validator), 503, 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_set_attachment(cbl_collection* coll, const char* doc_id,
                                  const char* parent_rev_id, const char* name,
                                  const char* content_type, const char* digest,
                                  char** out_rev_id, cbl_error* err);

/* Removes attachment `name`, saving a new revision on parent_rev_id (the current
 * revision; NULL: whatever is current). The content stays stored until compaction finds
 * it unreferenced. *out_rev_id (optional): as above. Errors: 404 (no such document or
 * attachment), 409 (parent not current), 400, 403, 503, 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_remove_attachment(cbl_collection* coll, const char* doc_id,
                                     const char* parent_rev_id, const char* name,
                                     char** out_rev_id, cbl_error* err);

/* The attachment names of the current revision as a JSON array of strings, sorted by
 * UTF-8 bytes ("[]" when none). Caller frees. Errors: 404 (absent or deleted), 400,
 * 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_attachment_names(cbl_collection* coll, const char* doc_id,
                                    char** out_json, cbl_error* err);

/* Reads a whole attachment of the current revision into memory. *out_bytes receives a
 * buffer the caller frees with cbl_free (never NULL on success, even for 0 bytes) and
 * *out_length its length. Content that does not match its digest fails with 500.
 * Errors: 404 (no such document or attachment, or content missing), 400, 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_get_attachment(cbl_collection* coll, const char* doc_id, const char* name,
                                  void** out_bytes, size_t* out_length, cbl_error* err);

/* Writes an attachment of the current revision to the file `path` (streamed, constant
 * memory): written beside it under a temporary name, then renamed over `path`, so
 * `path` never holds partial content. Errors: 404 (no such document or attachment), 400
 * (bad path, e.g. a directory or an unwritable folder), 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_save_attachment_to_file(cbl_collection* coll, const char* doc_id,
                                           const char* name, const char* path,
                                           cbl_error* err);

/* Reads stored content in chunks, with seek. Released by cbl_blob_reader_close. It
 * holds the content open: it keeps reading it even if a later revision or compaction
 * drops it, and it does not depend on its database handle staying open. Calls on one
 * reader are serialized. */
typedef struct cbl_blob_reader cbl_blob_reader;

/* Opens attachment `name` of the current revision for reading, at offset 0.
 * Errors: 404 (no such document or attachment, or content missing), 400, 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_open_attachment(cbl_collection* coll, const char* doc_id, const char* name,
                                   cbl_blob_reader** out_reader, cbl_error* err);

/* Reads up to `capacity` bytes at the current offset into `buffer` and advances;
 * *out_read receives the count, 0 only at the end. When the content is read from
 * offset 0 to the end without seeking, it is checked against its digest: the read that
 * reaches the end fails with 500 on a mismatch. Errors: 400 (invalid handle, NULL
 * buffer with capacity > 0), 500. */
CBL_WARN_UNUSED cbl_status cbl_blob_reader_read(cbl_blob_reader* reader, void* buffer, size_t capacity,
                                size_t* out_read, cbl_error* err);

/* Moves the read offset to `offset` (0 to the length). Errors: 400 (past the end,
 * invalid handle). */
CBL_WARN_UNUSED cbl_status cbl_blob_reader_seek(cbl_blob_reader* reader, uint64_t offset, cbl_error* err);

/* The content's length in bytes. Errors: 400. */
CBL_WARN_UNUSED cbl_status cbl_blob_reader_length(cbl_blob_reader* reader, uint64_t* out_length,
                                  cbl_error* err);

/* Closes and releases the reader. NULL and invalid handles are ignored. */
void cbl_blob_reader_close(cbl_blob_reader* reader);

/* ------------------------------------------------------------------------------------ */
/* 8. Changes                                                                           */
/* ------------------------------------------------------------------------------------ */

/* The changes feed: one entry per document changed after sequence `since`, in sequence
 * order (a document appears once, at its latest sequence; purged documents not at all).
 * options_json (optional): {"limit": n, "include_docs": bool, "all_revs": bool,
 * "style": "all_docs"|"main_only" (CouchDB's name for all_revs), "descending": bool,
 * "doc_ids": [ids] (only these documents), "filter": name (a filter registered with
 * cbl_db_set_filter; 404 when none is), "filter_params": {...} (given to the filter)}.
 * With doc_ids or a filter, "limit" counts the entries that pass, and "last_seq" is the
 * last sequence examined, so a caller resuming from it skips what was filtered out.
 * Result:
 *   {"results":[{"seq":n,"id":..,"changes":[{"rev":..},...],"deleted":true?,
 *                "doc":{...}?}, ...], "last_seq": n}
 * "changes" holds the current revision, or with all_revs every leaf. Caller frees.
 * A document ID in "doc_ids" that this database cannot hold matches nothing (no error).
 * Errors: 400 (malformed options: not an object, an unknown option or a wrong type),
 * 404 (no filter registered under "filter"), 500. A filter callback runs during the
 * call (see cbl_filter_fn). */
CBL_WARN_UNUSED cbl_status cbl_collection_changes(cbl_collection* coll, uint64_t since,
                                  const char* options_json, char** out_json, cbl_error* err);

/* Salvage: reads what is still readable from a damaged collection, whose listing and
 * changes feed fail at the first damaged page while most documents still read by ID. It
 * finds document IDs through the docid index (from both ends) and row by row, then reads
 * each document on its own. `each` receives every readable leaf revision as JSON, in
 * CouchDB's open_revs form (_id, _rev, _revisions, _deleted, _attachments inline in
 * base64, the content): what cbl_collection_docs_put_existing takes back into a new
 * database. The JSON is valid during the call only; `each` runs on the calling thread and
 * must not use this collection. out_report (optional) receives, caller frees:
 *   {"documents": n, "revisions": n, "lost": [{"id": .., "error": ..}, ...],
 *    "unreadable_rows": n}
 * "lost" lists documents known by ID that could not be read; "unreadable_rows" counts row
 * lookups that failed (documents whose ID is unknown may be among them). Opening the
 * database read-only ("read_only" in cbl_db_open) keeps it as found.
 * Errors: 400 (each NULL), 500 (nothing could be read at all). Thread-safe. */
typedef void (*cbl_revision_fn)(void* context, const char* revision_json);
CBL_WARN_UNUSED cbl_status cbl_collection_salvage(cbl_collection* coll, cbl_revision_fn each, void* context,
                                  char** out_report, cbl_error* err);

/* One change delivered to a listener. Pointers are valid during the callback only. */
typedef struct cbl_change {
    const char* doc_id;
    const char* rev_id;     /* the document's current revision after the change */
    uint64_t    sequence;
    int32_t     deleted;    /* 1 when the current revision is a tombstone (or purged: rev_id "") */
    int32_t     external;   /* 1 when inserted with cbl_doc_put_existing (replication), or
                               committed by another process (see below) */
} cbl_change;

/* Receives the changes of one committed transaction (or a part of it), in commit order,
 * after the commit, never for an aborted transaction.
 * Changes committed by another process (another program, the `cblite` tool) reach the
 * listeners too, marked external, within about 250 ms of their commit (SQLite's
 * PRAGMA data_version, read every 250 ms by one thread per open database file while it
 * has listeners; the thread stops when the file's last handle closes). They come on
 * that thread, one batch per round, each document at its latest sequence (several
 * changes to one document between two rounds arrive as one). Another process's purges
 * of whole documents (cbl_doc_purge, expiration, cbl_doc_purge_revisions removing every
 * leaf) come too, as purges (rev_id "", deleted 1), before the round's other changes; the
 * file keeps a log of its last 10,000 purges for this (a purge by a cblite older than
 * this one is not logged). */
typedef void (*cbl_change_fn)(void* context, const cbl_change* changes, size_t count);

/* A registered listener. Released by cbl_listener_token_remove. */
typedef struct cbl_listener_token cbl_listener_token;

/* Listens to every change of the collection, whichever handle in this process made it.
 * On success *out_token is a handle; release it with cbl_listener_token_remove.
 * Errors: 400 (NULL callback), 404. */
CBL_WARN_UNUSED cbl_status cbl_collection_add_change_listener(cbl_collection* coll, cbl_change_fn callback,
                                              void* context, cbl_listener_token** out_token,
                                              cbl_error* err);

/* Listens to changes of one document of the collection (the document need not exist).
 * Errors: 400 (NULL callback; doc_id not a valid document ID), 404. */
CBL_WARN_UNUSED cbl_status cbl_collection_add_document_listener(cbl_collection* coll, const char* doc_id,
                                                cbl_change_fn callback, void* context,
                                                cbl_listener_token** out_token,
                                                cbl_error* err);

/* Listens to the default collection (same as the collection call). Errors: 400 (NULL
 * callback). */
CBL_WARN_UNUSED cbl_status cbl_db_add_change_listener(cbl_db* db, cbl_change_fn callback, void* context,
                                      cbl_listener_token** out_token, cbl_error* err);

/* Removes the listener and releases the token. Returns only when no call of its callback
 * is running (unless called from inside that callback), so the caller may free its
 * context right after. Removing a token twice, or after its database was closed, is
 * harmless. NULL is ignored. */
void cbl_listener_token_remove(cbl_listener_token* token);

/* Deprecated: use cbl_listener_token_remove, the same call under the name of its first
 * argument. */
void cbl_listener_remove(cbl_listener_token* token)
    CBL_DEPRECATED("use cbl_listener_token_remove");

/* Notification delivery. By default, the thread that commits a change calls the
 * listeners right after the commit (and any thread committing meanwhile leaves its
 * changes to the one already delivering, keeping commit order).
 * buffer: when enabled, changes of this database are queued until
 * cbl_db_send_notifications is called (on whatever thread calls it).
 * wait: returns once every committed change has been delivered (never waits for itself
 * when called from a callback; never waits for buffered changes).
 * Errors: all three 400; wait 503 (changes still being delivered after timeout_ms). */
CBL_WARN_UNUSED cbl_status cbl_db_buffer_notifications(cbl_db* db, int enabled, cbl_error* err);
CBL_WARN_UNUSED cbl_status cbl_db_send_notifications(cbl_db* db, cbl_error* err);
CBL_WARN_UNUSED cbl_status cbl_db_wait_notifications(cbl_db* db, uint32_t timeout_ms, cbl_error* err);

/* ------------------------------------------------------------------------------------ */
/* 9. Views and queries                                                                 */
/* ------------------------------------------------------------------------------------ */

/* A view is a persistent index of a collection built by a map function (Couchbase Lite
 * 1.x map/reduce). Its functions are registered at run time on a view handle and are not
 * stored; its index is stored in the database and updated incrementally, on demand, from
 * the documents changed since it was last updated: deleted and purged documents leave
 * it, updated ones replace their rows, a conflicted document is indexed by its current
 * (winning) revision. Changing the version string discards the index and rebuilds it.
 *
 * Keys sort by CouchDB's collation, inside the index itself:
 *   null < false < true < numbers (by value) < strings < arrays < objects;
 * strings by the Unicode Collation Algorithm (ICU, root locale: "a" < "A" < "aa" < "b"),
 * arrays element by element (a prefix first), objects member by member as emitted.
 * Rows with equal keys sort by document ID (byte order). Numbers compare as doubles (as
 * in JavaScript): 1 and 1.0 are equal keys, as are integers beyond 2^53 that round to the
 * same double (a row still shows an emitted integer's exact digits); so are canonically equivalent strings (U+00E9 and e + U+0301). A grouped
 * row's key is the JSON one of its rows emitted. The index stores each key in a form whose
 * byte order is this collation (strings as ICU sort keys), tagged with ICU's collation
 * version: after an ICU upgrade that changes it, the next update rebuilds the index, and
 * until then a query with "update": false finds no rows. Indexes written by cblite 0.1
 * (JSON keys) are dropped and rebuilt the same way.
 *
 * Query options (one JSON object, CouchDB's names; all optional):
 *   "key": k | "keys": [k, ...]      rows with exactly these keys ("keys": in that order)
 *   "startkey", "endkey": k          the range (inclusive), in scan order
 *   "inclusive_end": bool            default true
 *   "startkey_docid", "endkey_docid" tie-breaks among rows whose key equals start/end key
 *   "descending": bool               reverse order; start is then the high end of the range
 *   "limit": n, "skip": n            after grouping/reducing
 *   "reduce": bool                   false: map rows only (the seeds' mapOnly); true fails
 *                                    with 400 on a view without a reduce function
 *   "group": bool                    group rows with equal keys
 *   "group_level": n                 group array keys by their first n items; at level 1
 *                                    non-array keys group by equality, at higher levels
 *                                    rows with non-array keys are left out
 *   "include_docs": bool             add each row's document (map rows only; 400 otherwise)
 *   "conflicts": bool                with include_docs: each document with its "_conflicts"
 *   "update": true | false | "after" update the index before the query (default), read it
 *                                    as it is, or read it as it is now and update it on a
 *                                    background thread ("stale": "ok"/"update_after" too)
 *   "prefix_match_level": n          treat the end key (start key when descending) as a
 *                                    prefix: a string matches every string it begins;
 *                                    level 1 on an array matches arrays beginning with its
 *                                    items; level n > 1 applies level n-1 to its last item
 *   "sorted": bool                   CouchDB's: false allows rows in any order (the same
 *                                    set); the rows still come in key order here
 *   "full_text_query": "q"           the view's text keys matching q (cbl_emitter_emit_text;
 *                                    Couchbase Lite 1.x's fullTextQuery), query syntax as
 *                                    cbl_collection_search's (section 14); see below
 *   "full_text_ranking": bool        default true: best match first (BM25, ties in index
 *                                    order); false: index order (document ID, emit order)
 *   "full_text_snippets": true | false | {"open": "<b>", "close": "</b>", "ellipsis": "…",
 *                                    "tokens": 16 (1-64)}  default false: each row's snippet
 * Unknown options and wrong types: 400.
 *
 * Full-text queries: with "full_text_query", the rows are the text keys matching it, with
 * their value, document ("id" redirected by a value's "_id" as above), "seq" and, as
 * "key" (key_json), the match: {"text": the emitted text, "score": BM25 relevance (higher
 * is better), "matches": [{"term": t, "range": [start, length]}, ...], "snippet": "…" or
 * null}. "matches" lists every matched word of the text in text order; "range" is in
 * UTF-8 bytes of "text"; "term" numbers the query's words from 0 in query order (after
 * analysis: stop words have none, a repeated word keeps its first number, each word of a
 * phrase has its own). Words are folded and stemmed ("cat" finds "cats") by the view's
 * analyzer. "limit", "skip", "descending" (reverses the order), "include_docs",
 * "conflicts" and "update" apply; "key", "keys", "startkey", "endkey", "*_docid",
 * "prefix_match_level", "group", "group_level" and "reduce": true are 400; a view with a
 * reduce function answers unreduced rows. A malformed query is a 400 whose message ends
 * with its position ("... at position 7", counted in Unicode scalars). A view that has
 * emitted no text key answers no rows. In ordinary queries a text key's row has the key
 * null (as in 1.x) and its emitted value.
 *
 * Results (JSON): {"total_rows":n,"offset":skip,"update_seq":last indexed sequence,
 *   "rows":[{"id":doc ID,"key":k,"value":v,"seq":n,"source_id":..?,"doc":{..}?}, ...]}
 * "id" is the document the row refers to: the value's "_id" when the value is an object
 * with one (redirection), else "source_id", the document that emitted it (only written
 * when different). A row emitted without a value has "value":null. Reduced and grouped
 * rows are {"key":k,"value":v} (key null without grouping; a reduce over no rows gives
 * no row). */

typedef struct cbl_view cbl_view;          /* released by cbl_view_release */
typedef struct cbl_emitter cbl_emitter;    /* valid only during a map callback */
typedef struct cbl_query_result cbl_query_result;  /* released by cbl_query_result_release */
typedef struct cbl_live_query cbl_live_query;      /* released by cbl_live_query_stop */

/* Map callback: receives a document's current revision as JSON (with "_id" and "_rev")
 * and emits any number of rows with cbl_emitter_emit. It must be pure: same document,
 * same rows. It may be called on any thread (also library threads: live queries,
 * "update":"after"), for several queries at once, and not while the library holds its
 * locks — except when the query runs inside a transaction of the calling thread.
 * doc_json and emitter are valid during the call only. */
typedef void (*cbl_map_fn)(void* context, const char* doc_json, cbl_emitter* emitter);

/* Emits one row from a map callback. key_json: any JSON value (null included);
 * value_json: any JSON value, or NULL for no value (stored as nothing, returned as
 * null). Errors: 400 (invalid JSON, or the emitter is not the one of a running map
 * callback). A failed emit also fails the index update (and so the query) with that
 * error once the callback returns. */
CBL_WARN_UNUSED cbl_status cbl_emitter_emit(cbl_emitter* emitter, const char* key_json,
                                            const char* value_json, cbl_error* err);

/* Emits a text key from a map callback (Couchbase Lite 1.x's emit(CBLTextKey(text),
 * value)): a row whose key is null in ordinary queries, and whose text is indexed for the
 * view's full-text queries ("full_text_query", below) with the view's analyzer
 * (cbl_view_set_text_analyzer). text: UTF-8, copied; value_json: any JSON value, or NULL
 * for no value. A document may emit any number of text keys besides other rows; they
 * follow its updates, deletion and purge as its other rows do. Errors: 400 (NULL or
 * invalid UTF-8 text, invalid JSON, or the emitter is not the one of a running map
 * callback); a failed emit fails the index update as cbl_emitter_emit's does. Thread
 * safety: as cbl_emitter_emit (only from the map callback running with this emitter). */
CBL_WARN_UNUSED cbl_status cbl_emitter_emit_text(cbl_emitter* emitter, const char* text,
                                                 const char* value_json, cbl_error* err);

/* Deprecated: use cbl_emitter_emit, the same call under the name of its first
 * argument. Errors: as cbl_emitter_emit. */
CBL_WARN_UNUSED cbl_status cbl_emit(cbl_emitter* emitter, const char* key_json,
                                    const char* value_json, cbl_error* err)
    CBL_DEPRECATED("use cbl_emitter_emit");

/* Reduce callback: keys_json and values_json are JSON arrays of the same length (values
 * emitted without one are null). With rereduce nonzero, keys_json is NULL and the values
 * are results of earlier calls on chunks of rows (the engine reduces large ranges in
 * chunks, so a reduce function must handle rereduce). Returns the reduced value as JSON
 * allocated with cbl_strdup (the library frees it), or NULL to fail the query (500).
 * Pointers are valid during the call only; thread rules as cbl_map_fn. */
typedef char* (*cbl_reduce_fn)(void* context, const char* keys_json, const char* values_json,
                               int rereduce);

/* A handle on the view `name` (1-255 bytes of UTF-8 without control characters) of a
 * collection. Nothing is stored until the view is first updated. Several handles may
 * name the same view; each carries its own functions. A name "DDOC/VIEW" without
 * functions set on the handle takes them from the stored design document `_design/DDOC`'s
 * JavaScript view (section 13), reloaded when that document changes. Errors: 400, 404
 * (collection deleted). Release with cbl_view_release. */
CBL_WARN_UNUSED cbl_status cbl_collection_view(cbl_collection* coll, const char* name, cbl_view** out_view,
                               cbl_error* err);

/* Sets the functions of this view handle. map: NULL removes them (queries then need
 * "update":false). At most one of reduce (a callback) and builtin_reduce ("_count",
 * "_sum" — CouchDB's: numbers, arrays of numbers (item by item; a number adds to item 0),
 * objects (field by field, recursively); a value it cannot sum makes the reduced value
 * CouchDB's {"error":"builtin_reduce_error","reason":…,"caused_by":VALUE}, the query still
 * succeeding —, "_stats" → {"sum","count","min","max","sumsqr"}, "_approx_count_distinct"
 * → an estimate of the distinct keys (HyperLogLog), computed natively) may be given; both
 * NULL: no reduce. version: any string;
 * when it differs from the one the index was built with, the next update discards the
 * index and rebuilds it. context is passed to both callbacks; it must stay valid while
 * they may still be called: until cbl_view_release returns and every live query started
 * on the handle is stopped. Errors: 400 (NULL version, unknown builtin, both reduce
 * kinds). */
CBL_WARN_UNUSED cbl_status cbl_view_set_map_reduce(cbl_view* view, cbl_map_fn map, cbl_reduce_fn reduce,
                                   const char* builtin_reduce, const char* version,
                                   void* context, cbl_error* err);

/* Brings the index up to date now (maps the documents changed since the last update).
 * Errors: 400 (also when a cbl_emitter_emit of the map callback failed), 404, 406 (no map
 * function), 503, 500. */
CBL_WARN_UNUSED cbl_status cbl_view_update(cbl_view* view, cbl_error* err);

/* The view's state as JSON: {"name":..,"last_sequence":n (0: never indexed),
 * "total_rows":n,"stale":bool (the collection has changes the index does not cover)}.
 * Caller frees. Errors: 400, 404, 500. */
CBL_WARN_UNUSED cbl_status cbl_view_info(cbl_view* view, char** out_json, cbl_error* err);

/* Deletes the view's index (tables and registry entry); the handle stays usable and
 * its next update rebuilds the index. Errors: 400, 404 (no index), 503, 500. */
CBL_WARN_UNUSED cbl_status cbl_view_delete(cbl_view* view, cbl_error* err);

/* Sets how this view handle's text keys (cbl_emitter_emit_text) are cut into terms, for
 * the texts and the full-text queries alike. analyzer_json: "english" (the default, as
 * Couchbase Lite 1.x: case and diacritics folded, English stemming, English stop words),
 * "standard" (folded only), or {"fold_diacritics": true, "stemming": false, "stop_words":
 * ["the", ...]} (members optional). Another analyzer than the default is part of the
 * index's version: the next update rebuilds the index when it changed. Errors: 400
 * (NULL or invalid JSON, an unknown analyzer). Thread safety: as cbl_view_set_map_reduce. */
CBL_WARN_UNUSED cbl_status cbl_view_set_text_analyzer(cbl_view* view, const char* analyzer_json, cbl_error* err);

/* Releases a view handle. Waits for background index updates it started
 * ("update":"after") to finish, so its callbacks are not called afterwards except by live
 * queries started on it, which keep running until stopped. NULL and invalid handles are
 * ignored. Not from inside one of the view's own callbacks. */
void cbl_view_release(cbl_view* view);

/* Sorted JSON array of the names of the collection's views that have an index. Caller
 * frees. Errors: 400, 404, 500. */
CBL_WARN_UNUSED cbl_status cbl_collection_view_names(cbl_collection* coll, char** out_json, cbl_error* err);

/* Runs a query (options above; NULL = {}) and returns its rows as JSON (see Results).
 * Caller frees. Errors: 400 (options; a failed cbl_emitter_emit), 406 (no map function and
 * "update" not false), 500 (also a reduce callback returning NULL), 404, 503. */
CBL_WARN_UNUSED cbl_status cbl_view_query_json(cbl_view* view, const char* options_json, char** out_json,
                               cbl_error* err);

/* Runs a query and returns a result to read row by row: the index is read in pages as
 * the rows are consumed, so memory stays constant however many rows match. Errors as
 * cbl_view_query_json. Release the result with cbl_query_result_release. */
CBL_WARN_UNUSED cbl_status cbl_view_query(cbl_view* view, const char* options_json,
                          cbl_query_result** out_result, cbl_error* err);

/* One row of a result. The strings belong to the result and stay valid until the next
 * call reading rows from it (cbl_query_result_next, _next_rows or _json), or its
 * release. */
typedef struct cbl_query_row {
    const char* key_json;       /* the key (all-docs: the document ID as a JSON string) */
    const char* value_json;     /* the value as JSON, or NULL when none was emitted */
    const char* doc_id;         /* the document the row refers to (redirected); NULL for
                                   reduced or grouped rows and for all-docs misses */
    const char* source_doc_id;  /* the document that emitted the row; NULL as doc_id */
    const char* doc_json;       /* the document with include_docs, else NULL (also when
                                   it no longer exists) */
    const char* error;          /* all-docs "keys" misses: "not_found"; else NULL */
    uint64_t    sequence;       /* the emitting document's sequence; 0 when aggregated */
} cbl_query_row;

/* Reads the next row into *row and sets *out_has_row to 1, or sets it to 0 at the end
 * (row untouched). Errors: 400 (also a NULL row), 404, 500 (storage errors while
 * paging; also, today, a view's result whose collection was deleted meanwhile); on error
 * *out_has_row is 0. Calls on one result are serialized. */
CBL_WARN_UNUSED cbl_status cbl_query_result_next(cbl_query_result* result, cbl_query_row* row,
                                 int* out_has_row, cbl_error* err);

/* Reads up to `capacity` next rows into rows[0 .. capacity-1] in one call, where
 * cbl_query_result_next takes a call per row. Sets *out_count to the number read:
 * capacity unless the rows ran out (or a storage error stopped the page, see below), 0
 * once the result is at the end (rows untouched). So
 *     size_t n;
 *     while (cbl_query_result_next_rows(r, rows, 64, &n, &err) == CBL_OK && n > 0) ...
 * reads every row. The strings of all the page's rows stay valid together until the
 * next call reading rows from the result (this one, cbl_query_result_next or _json) or
 * its release; the array is the caller's. The calls mix on one result: each continues
 * where the other stopped. capacity: the number of cbl_query_row the array holds, 1 to
 * SIZE_MAX / sizeof(cbl_query_row). Errors: 400 (also NULL rows or out_count, a
 * capacity of 0 or above that bound: no row is read), 404, 500 (as
 * cbl_query_result_next); on error *out_count is 0. A storage error met after some rows
 * of a page were read returns those rows with CBL_OK, and the error from the next call.
 * Calls on one result are serialized. */
CBL_WARN_UNUSED cbl_status cbl_query_result_next_rows(cbl_query_result* result, cbl_query_row* rows,
                                      size_t capacity, size_t* out_count, cbl_error* err);

/* Sets *out_stale to 1 when re-running the query could give other rows: the index has
 * changed since the result was made, or the collection has changes the index does not
 * cover yet (conservative: may say 1 when the rows would be the same). All-docs
 * results: the collection changed. Errors: 400, 404, 500. */
CBL_WARN_UNUSED cbl_status cbl_query_result_is_stale(cbl_query_result* result, int* out_stale, cbl_error* err);

/* The rows not read yet, as the JSON object of cbl_view_query_json. Caller frees.
 * Errors: as cbl_query_result_next. */
CBL_WARN_UNUSED cbl_status cbl_query_result_json(cbl_query_result* result, char** out_json, cbl_error* err);

/* Releases a result. NULL and invalid handles are ignored. Do not release a result
 * passed to a live query callback (the library does). */
void cbl_query_result_release(cbl_query_result* result);

/* All-documents query of a collection: one row per document, keyed by document ID in
 * byte (ASCII) order, value {"rev":current,"deleted":true?,"_conflicts":[..]?}. Takes
 * the range options above with document IDs as keys (strings; prefix_match_level 1 on
 * the end key), "include_docs", and
 *   "all_docs_mode": "all_docs" (default: undeleted documents) | "include_deleted" |
 *                    "show_conflicts" (adds "_conflicts": the other undeleted leaves) |
 *                    "only_conflicts" (only documents in conflict, with "_conflicts") |
 *                    "by_sequence" (every document, deleted included, in sequence order;
 *                    startkey/endkey are sequences)
 * With "keys", rows come in the order given (reversed with "descending"), deleted
 * documents included, and an ID with no document gives {"key":id,"error":"not_found"}.
 * "total_rows" is the number of undeleted documents; "offset" the rows before the start
 * key plus "skip", as CouchDB counts it. Caller frees. Errors: 400 (options; reduce/group), 404, 500. */
CBL_WARN_UNUSED cbl_status cbl_collection_all_docs(cbl_collection* coll, const char* options_json,
                                   char** out_json, cbl_error* err);

/* The same, read row by row (see cbl_view_query). Errors as cbl_collection_all_docs.
 * Release the result with cbl_query_result_release. */
CBL_WARN_UNUSED cbl_status cbl_collection_all_docs_query(cbl_collection* coll, const char* options_json,
                                         cbl_query_result** out_result, cbl_error* err);

/* Live queries. A live query runs its query on its own thread, calls `callback` with
 * the first result set, then watches the collection: after each committed change it
 * updates the index and re-runs only when the index changed under keys the query can
 * see (Couchbase Lite 1.3 #1114: changes elsewhere in the index, or documents that emit
 * nothing, cost no re-run), and calls `callback` only when the rows differ from the last
 * result set (or the options were changed). "update" in its options is ignored.
 * The callback runs on the live query's thread, after the commit, outside the library's
 * locks; it may call back into the library (also cbl_live_query_stop on itself). The
 * result it receives is valid during the call only (read it with
 * cbl_query_result_next / _next_rows / _json; do not release it). */
typedef void (*cbl_live_query_fn)(void* context, cbl_query_result* result);

/* Starts a live query on a view (which needs a map function). The view handle may be
 * released afterwards. Errors: 400 (options, NULL callback), 404, 406 (no map
 * function).
 * Stop and release it with cbl_live_query_stop. */
CBL_WARN_UNUSED cbl_status cbl_live_query_start(cbl_view* view, const char* options_json,
                                cbl_live_query_fn callback, void* context,
                                cbl_live_query** out_live_query, cbl_error* err);

/* Replaces the options (a live find's: its _find body); the query re-runs and delivers
 * its new result set. Errors: 400. */
CBL_WARN_UNUSED cbl_status cbl_live_query_set_options(cbl_live_query* live_query, const char* options_json,
                                      cbl_error* err);

/* Returns once every change committed (and notified) before the call has been processed
 * and any resulting callback has returned. Errors: 400 (bad handle), 406 (stopped). Must
 * not be called from the live query's own callback, nor while the calling thread holds a
 * transaction open (the live query would wait for it to update the index). */
CBL_WARN_UNUSED cbl_status cbl_live_query_wait_idle(cbl_live_query* live_query, cbl_error* err);

/* Stops the live query and releases its handle. Returns once no call of its callback is
 * running and none will follow (unless called from that callback), so the caller may
 * free the context right after. NULL and invalid handles are ignored. */
void cbl_live_query_stop(cbl_live_query* live_query);

/* Mango queries (CouchDB 3.5's _find) and json indexes.
 *
 * A query is the JSON body of CouchDB's POST /db/_find: {"selector": {...}, "fields",
 * "sort", "limit" (default 25, as CouchDB), "skip", "bookmark", "use_index",
 * "allow_fallback", "execution_stats", "conflicts", "update", "stable", "r"}. Selectors
 * take every operator of CouchDB 3.5 ($eq $ne $gt $gte $lt $lte $exists $type $in $nin
 * $size $mod $regex $beginsWith $all $elemMatch $allMatch $keyMapMatch $and $or $nor
 * $not) with its rules; values compare in the views' collation; $regex uses ICU's
 * regular expressions. Errors carry CouchDB's texts: the message is "<error>: <reason>"
 * ("invalid_operator: Invalid operator: $foo", "no_usable_index: No index exists for
 * this sort, try indexing by the sort fields.") with status 400 (a bad query, a sort no
 * index serves), 404 (no such index) or 503 (a "text" index).
 *
 * Indexes are design documents with "language": "query", stored exactly as CouchDB
 * stores them (they replicate to and from CouchDB, and one written as a document
 * defines its indexes). Each is kept up to date with the documents (a query sees its
 * own writes); the planner chooses among them as CouchDB does.
 *
 * Thread safety: as the other collection calls; a result is read by one thread at a
 * time (calls on it are serialized). */

/* Runs a query and returns a result to read row by row with cbl_query_result_next /
 * _next_rows (documents are found a page at a time as the rows are read: memory stays
 * bounded whatever the result's size — a page holds at most 2,048 rows and about 1 MiB
 * of documents, or one larger document). Each row: doc_id and source_doc_id the document's
 * ID, doc_json the document (only the "fields" when given), key_json the index key it
 * was found at (the ID as a JSON string when no index served), value_json NULL. Release
 * with cbl_query_result_release. Errors: 400 (query; message as above), 404, 500, 503. */
CBL_WARN_UNUSED cbl_status cbl_collection_find(cbl_collection* coll, const char* query_json,
                                               cbl_query_result** out_result, cbl_error* err);

/* What a find's result says beside its rows, as JSON {"bookmark": the next page's
 * (pass it as "bookmark"), "warning": CouchDB's warnings (absent when none),
 * "execution_stats": {...}}; final once the rows are read to the end. Caller frees.
 * Errors: 400 (NULL out_json, a result not made by cbl_collection_find). */
CBL_WARN_UNUSED cbl_status cbl_query_result_find_info(cbl_query_result* result, char** out_json, cbl_error* err);

/* The plan of a query, as CouchDB's POST /db/_explain answers it (the index chosen, the
 * normalized selector, the other indexes and why they were not chosen, the index range).
 * Caller frees. Errors: as cbl_collection_find. */
CBL_WARN_UNUSED cbl_status cbl_collection_explain(cbl_collection* coll, const char* query_json, char** out_json,
                                                  cbl_error* err);

/* Creates a json index from the body of CouchDB's POST /db/_index: {"index": {"fields":
 * [...], "partial_filter_selector": {...}?}, "ddoc"?, "name"?, "type": "json"?}, by
 * writing its design document. Sets *out_json to {"result": "created" or "exists", "id":
 * the design document's ID, "name"}; caller frees. Errors: 400 (the definition; an
 * existing design document of another language), 409 (a concurrent write of the design
 * document), 503 (type "text"). */
CBL_WARN_UNUSED cbl_status cbl_collection_create_index(cbl_collection* coll, const char* index_json, char** out_json,
                                                       cbl_error* err);

/* Deletes a json index: its view from its design document ("ddoc" with or without
 * "_design/"), the document itself when no view is left, and the index's rows.
 * Errors: 400, 404 (no such index), 409. */
CBL_WARN_UNUSED cbl_status cbl_collection_delete_index(cbl_collection* coll, const char* ddoc, const char* name,
                                                       cbl_error* err);

/* Starts a live find: the query (a _find body, as cbl_collection_find takes) runs on the
 * live query's own thread, then again after each committed change to the collection, and
 * `callback` gets its result (rows as cbl_collection_find's: doc_json the document found)
 * first, then each time the documents found differ from the last ones delivered. The
 * callback rules, cbl_live_query_wait_idle and cbl_live_query_stop are the live queries'
 * (section 9); cbl_live_query_set_options takes a new _find body. Errors: as
 * cbl_collection_find (the query is checked and planned before this returns), 400 (NULL
 * callback). */
CBL_WARN_UNUSED cbl_status cbl_collection_live_find(cbl_collection* coll, const char* query_json,
                                                    cbl_live_query_fn callback, void* context,
                                                    cbl_live_query** out_live_query, cbl_error* err);

/* The indexes as CouchDB's GET /db/_index lists them: {"total_rows", "indexes": [the
 * special _all_docs index, then each json index by design document and name]}. Caller
 * frees. Errors: 400, 404, 500. */
CBL_WARN_UNUSED cbl_status cbl_collection_indexes(cbl_collection* coll, char** out_json, cbl_error* err);

/* ------------------------------------------------------------------------------------ */
/* 10. Replication surface: what a CouchDB-protocol peer asks of a database             */
/* ------------------------------------------------------------------------------------ */

/* These calls take and return CouchDB's own JSON shapes (the bodies of `_revs_diff`,
 * `_bulk_docs`, `open_revs` and `_bulk_get`), so a replicator or tool written against
 * CouchDB's documentation can use them as they are. Every function here is thread-safe;
 * every returned string is the caller's, freed with cbl_free; on failure *out_json is
 * NULL. Per-document problems are reported inside the result (CouchDB's way), never
 * as the call's status: a status other than CBL_OK means nothing was done (400 for a
 * malformed request, 404 for a deleted collection, 503 busy, 400 closed handle). The
 * listener answers the same requests over HTTP with the same code, so a body here and
 * the listener's body for the same request are the same bytes (the listener's ends with
 * a newline); per-document "error" names and "reason"s are CouchDB's ("conflict" says
 * "Document update conflict."). */

/* _revs_diff. request_json: {"docid": ["rev", ...], ...}. Result:
 * {"docid": {"missing": ["rev", ...], "possible_ancestors": ["rev", ...]?}, ...} — only
 * documents with at least one revision this collection lacks; possible_ancestors are
 * the document's leaves of a lower generation than a missing revision (omitted when
 * none). Errors: 400 (malformed request), 404, 500. */
CBL_WARN_UNUSED cbl_status cbl_collection_revs_diff(cbl_collection* coll,
                                                    const char* request_json, char** out_json,
                                                    cbl_error* err);

/* Deprecated: use cbl_collection_revs_diff, the same call under the name of its first
 * argument. Errors: as cbl_collection_revs_diff. */
CBL_WARN_UNUSED cbl_status cbl_revs_diff(cbl_collection* coll, const char* request_json,
                                         char** out_json, cbl_error* err)
    CBL_DEPRECATED("use cbl_collection_revs_diff");

/* Inserts revisions made elsewhere (`_bulk_docs` with new_edits=false), all in one
 * transaction. docs_json: [doc, ...] or {"docs": [doc, ...]}; each doc has "_id",
 * "_rev", optionally "_revisions": {"start": N, "ids": [digest of N, of N-1, ...]}
 * (the history, newest first), "_deleted", "_attachments" with inline base64 "data"
 * or stubs ("stub": true) of content this database holds. The history is grafted as
 * CouchDB does: onto the newest revision of it already held, or as a new root when
 * none is (which may create a conflict); ancestors are added without bodies. A
 * revision already held succeeds without change. Result, per document, in order:
 * [{"ok": true, "id", "rev"} | {"id", "rev"?, "error", "reason"}, ...]; errors are
 * CouchDB's names: "bad_request" (malformed), "forbidden" (a validator refused),
 * "conflict", "file_exists" (a stub names content not held here; status 412).
 * Errors: 400 (malformed request), 404, 503, 500. */
CBL_WARN_UNUSED cbl_status cbl_collection_docs_put_existing(cbl_collection* coll,
                                                            const char* docs_json,
                                                            char** out_json, cbl_error* err);

/* Deprecated: use cbl_collection_docs_put_existing, the same call under the name of
 * its first argument. Errors: as cbl_collection_docs_put_existing. */
CBL_WARN_UNUSED cbl_status cbl_docs_put_existing(cbl_collection* coll, const char* docs_json,
                                                 char** out_json, cbl_error* err)
    CBL_DEPRECATED("use cbl_collection_docs_put_existing");

/* Saves new revisions (`_bulk_docs` with new_edits=true) in one transaction: each doc
 * as cbl_doc_put takes it ("_id" optional: a UUID is made; "_rev" the parent;
 * "_deleted": true for a tombstone). Result as cbl_collection_docs_put_existing's, with
 * "conflict" for a stale or missing parent. Errors: 400 (malformed request), 404, 503,
 * 500. */
CBL_WARN_UNUSED cbl_status cbl_collection_docs_save(cbl_collection* coll, const char* docs_json,
                                                    char** out_json, cbl_error* err);

/* Deprecated: use cbl_collection_docs_save, the same call under the name of its first
 * argument. Errors: as cbl_collection_docs_save. */
CBL_WARN_UNUSED cbl_status cbl_docs_save(cbl_collection* coll, const char* docs_json,
                                         char** out_json, cbl_error* err)
    CBL_DEPRECATED("use cbl_collection_docs_save");

/* Reads revisions of one document (`GET /db/doc?open_revs=...`). revs_json: ["rev", ...],
 * or NULL / "all" for every leaf, deleted ones included. options_json (optional):
 * {"revs": bool (add "_revisions"), "latest": bool (a requested revision that is not a
 * leaf stands for the leaves descending from it), "attachments": bool (inline base64
 * "data" for attachments newer than "atts_since"), "atts_since": ["rev", ...] (a
 * non-empty list implies "attachments", as in CouchDB), "follows": bool (with
 * attachments: "follows": true entries instead of "data"; each entry's "digest" names
 * the content the caller then sends itself, as in a multipart body), "conflicts", "deleted_conflicts", "revs_info",
 * "local_seq": bool, "meta": bool (conflicts, deleted_conflicts and revs_info)}; an
 * unknown member is a 400. The options are read by the same code as the listener's
 * query parameters of the same names. Result:
 * [{"ok": doc} | {"missing": "rev"}, ...]. Errors: 404 (the document does not exist
 * and all leaves were asked for), 400 (document ID, malformed revs_json or options),
 * 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_open_revs(cbl_collection* coll, const char* doc_id, const char* revs_json,
                             const char* options_json, char** out_json, cbl_error* err);

/* Reads many documents at once (`_bulk_get`). request_json:
 * {"docs": [{"id": .., "rev": ..?, "atts_since": [..]?}, ...]} (no "rev": the current
 * revision, even a tombstone; a document's own non-empty "atts_since" asks for its
 * attachments newer than those revisions, as in CouchDB, even without "attachments");
 * options_json as cbl_doc_open_revs's. Result:
 * {"results": [{"id": .., "docs": [{"ok": doc} | {"error": {"id", "rev", "error":
 * "not_found", "reason": "missing"}}]}, ...]}. Errors: 400 (malformed request or
 * options), 404, 500. */
CBL_WARN_UNUSED cbl_status cbl_collection_docs_bulk_get(cbl_collection* coll,
                                                        const char* request_json,
                                                        const char* options_json,
                                                        char** out_json, cbl_error* err);

/* Deprecated: use cbl_collection_docs_bulk_get, the same call under the name of its first
 * argument. Errors: as cbl_collection_docs_bulk_get. */
CBL_WARN_UNUSED cbl_status cbl_docs_bulk_get(cbl_collection* coll, const char* request_json,
                                             const char* options_json, char** out_json,
                                             cbl_error* err)
    CBL_DEPRECATED("use cbl_collection_docs_bulk_get");

/* CouchDB's `_purge`: removes the given leaf revisions (revs_json: ["rev", ...]) and the
 * ancestors no remaining leaf shares; when no leaf remains the document is purged as by
 * cbl_doc_purge. Unknown and non-leaf revisions are ignored. *out_json (optional): the
 * purged leaf revision IDs as a JSON array, as CouchDB answers (their removed ancestors
 * unnamed; "[]" for an absent document). Each call joins the purge history CouchDB's
 * `_purged_infos` and `purge_seq` show (the listener serves them). Errors: 400
 * (document ID, revs_json not an array of strings), 404, 503, 500. */
CBL_WARN_UNUSED cbl_status cbl_doc_purge_revisions(cbl_collection* coll, const char* doc_id,
                                   const char* revs_json, char** out_json, cbl_error* err);

/* Waits until the collection has a change after `since` (*out_changed = 1) or
 * timeout_ms passes (*out_changed = 0), without polling: a commit in this process wakes
 * it at once, another process's within half a second. For longpoll and continuous
 * feeds. Errors: 400 (also when the database handle is closed while waiting), 404,
 * 500. */
CBL_WARN_UNUSED cbl_status cbl_collection_changes_wait(cbl_collection* coll, uint64_t since,
                                                       int32_t timeout_ms, int* out_changed,
                                                       cbl_error* err);

/* Deprecated: use cbl_collection_changes_wait, the same call under the name of its first
 * argument. Errors: as cbl_collection_changes_wait. */
CBL_WARN_UNUSED cbl_status cbl_changes_wait(cbl_collection* coll, uint64_t since,
                                            int32_t timeout_ms, int* out_changed, cbl_error* err)
    CBL_DEPRECATED("use cbl_collection_changes_wait");

/* A changes filter: returns non-zero when the change passes. doc_json is the changed
 * document's current revision (with "_id", "_rev", "_deleted"), params_json the
 * caller's "filter_params" ("{}" when none); both valid during the call only. Called
 * on the thread reading the feed, outside the database's write lock. */
typedef int (*cbl_filter_fn)(void* context, const char* doc_json, const char* params_json);

/* Registers (fn NULL: removes) the filter `name` for every handle of this database in
 * this process (the seeds' setFilterNamed); changes feeds name it in "filter".
 * Replacing or removing a filter waits until no call of the old one is running, so the
 * caller may free its context afterwards. Errors: 400 (name empty, over 255 bytes or
 * with control characters; closed handle). */
CBL_WARN_UNUSED cbl_status cbl_db_set_filter(cbl_db* db, const char* name, cbl_filter_fn fn, void* context,
                             cbl_error* err);

/* The database's stable identity (made at creation, kept in the file), as text.
 * Caller frees. Errors: 400, 500. */
CBL_WARN_UNUSED cbl_status cbl_db_uuid(cbl_db* db, char** out_uuid, cbl_error* err);

/* ------------------------------------------------------------------------------------ */
/* 11. Replicator: replicating a collection with a peer                                 */
/* ------------------------------------------------------------------------------------ */

/* A running replication of a local collection with a peer's database: another cblite
 * (its listener, below), Apache CouchDB 2.x/3.x, PouchDB's server, or any peer that
 * speaks CouchDB's replication protocol. Every function is thread-safe.
 *
 * How it works: each direction runs on a thread of its own with its own keep-alive
 * connection. Push sends local changes since its checkpoint: the peer's _revs_diff
 * says which revisions it lacks, they go with their history in _bulk_docs
 * (new_edits=false), and revisions with attachments the peer lacks go one by one as
 * multipart/related PUTs carrying only those attachments. Pull reads the peer's
 * _changes (style=all_docs; longpoll when continuous), asks this database which
 * revisions are missing, fetches them with _bulk_get (or open_revs where the peer has
 * no _bulk_get, and for attachments: multipart, streamed into the attachment store,
 * gzip-encoded ones decoded) and writes each batch in one transaction. Checkpoints
 * (_local/<replication id> on both peers, CouchDB's shape with session_id and history)
 * only move past a batch once all of it is written, so a run that is killed resumes
 * where the last one left off and nothing is lost or written twice. Conflicts stay
 * conflicts: both sides end with the same revision tree and the same winner.
 *
 * Design documents ("_design/NAME") replicate like any other document, both ways. A
 * document the peer holds but this database cannot take — JSON nested deeper than
 * CBL_MAX_JSON_DEPTH levels, an object with a duplicate key, a body over 64 MiB — is
 * reported as that
 * document's error (cbl_replicator_document_fn) and skipped; the replication goes on
 * and its checkpoint moves past it, and later runs try it again
 * (cbl_replicator_failed_documents). */
typedef struct cbl_replicator cbl_replicator;

/* Status updates: status_json is the object cbl_replicator_status returns. Called on a
 * replication thread whenever the status changes (activity, counts, error), never
 * while a lock of the library is held; it may call any function, cbl_replicator_stop
 * on this replicator included (which then returns at once). Valid during the call only. */
typedef void (*cbl_replicator_status_fn)(void* context, const char* status_json);

/* Documents replicated, in batches: documents_json is an array of
 *   {"direction":"push"|"pull","id":..,"rev":..,"deleted":true?,
 *    "error":{"status":n,"message":..}?}.
 * Failures are always delivered; successes only with "document_events": true. Same
 * threading rules as the status callback. */
typedef void (*cbl_replicator_document_fn)(void* context, const char* documents_json);

/* Starts replicating `coll` with the database at config_json's "url". config_json is an
 * object:
 *   "url": "http[s]://[user:password@]host[:port]/db" (required; credentials in the URL
 *       mean Basic auth),
 *   "direction": "push" | "pull" | "both" (default),
 *   "continuous": false (default: stop when caught up) | true (run until stopped,
 *       following changes on both sides within about a second),
 *   "create_target": true — push creates the peer's database when it is missing,
 *   "filter": name of a filter registered with cbl_db_set_filter (push), with
 *       "filter_params": {...},
 *   "pull_filter": the peer's filter ("ddoc/name" on CouchDB), with "pull_filter_params",
 *   "doc_ids": [ids] (both directions), "channels": [names] (pull from Sync Gateway),
 *   "headers": {"Name": "value"} sent with every request,
 *   "auth": {"type": "basic"|"session", "username", "password"} (session: POST /_session
 *       once, then its cookie) | {"type": "bearer", "token"},
 *   "remote_uuid": a stable name for the peer, used instead of its URL in the
 *       replication's identity (checkpoints survive the peer's address changing),
 *   "heartbeat_ms" (30000: how long a continuous pull's longpoll waits),
 *   "batch_size" (500 changes), "timeout_ms" (60000: how long the peer may take to
 *       answer), "max_retries" (9: a one-shot replication's retries of a transient
 *       failure), "retry_initial_ms" (500), "retry_max_ms" (300000) — back-off doubles
 *       from the first to the second; a continuous replication retries for ever,
 *   "tls": {"pinned_sha256": "64 hex digits" (trust exactly this certificate, e.g. a
 *       listener's cbl_server_tls_fingerprint) | "ca_file": "path/to/ca.pem"}
 *       (default: the system's trusted roots),
 *   "document_events": true — deliver every document to on_documents, not only errors.
 * Transient failures (no connection, timeouts, 408, 429, 5xx) are retried with
 * exponential back-off; a continuous replication goes "offline" meanwhile and comes back
 * by itself. 401, 403, 404 and a peer that does not speak the protocol stop it with the
 * error in its status. Either callback may be NULL. The replicator stops when its
 * database handle closes. On success *out_replicator is a handle; release it with
 * cbl_replicator_stop (also after a one-shot replication has ended).
 * Errors: 400 (NULL/invalid arguments, malformed or unknown configuration, invalid URL,
 * tls options on an http URL, unreadable CA file, a closed database), 500. A collection
 * deleted meanwhile stops the replication with 404 in its status. */
CBL_WARN_UNUSED cbl_status cbl_replicator_start(cbl_collection* coll, const char* config_json,
                                cbl_replicator_status_fn on_status,
                                cbl_replicator_document_fn on_documents, void* context,
                                cbl_replicator** out_replicator, cbl_error* err);

/* The current status. Caller frees *out_status_json:
 *   {"activity": "connecting"|"busy"|"idle"|"offline"|"stopped",
 *    "completed": n, "total": n   (changes handled / seen so far, both directions),
 *    "documents_pushed": n, "documents_pulled": n, "document_failures": n,
 *    "documents_to_retry": n   (failed revisions waiting to be tried again: see
 *                               cbl_replicator_failed_documents),
 *    "error": {"status": http status (0: no answer, the network failed), "message": ..}?}
 * "error" is the failure that stopped the replication or keeps it offline; it goes away
 * when a continuous replication recovers. Errors: 400 (invalid handle). */
CBL_WARN_UNUSED cbl_status cbl_replicator_status(cbl_replicator* replicator, char** out_status_json, cbl_error* err);

/* Waits until the replication has stopped (a one-shot one stops when done or failed),
 * up to timeout_ms (-1: no limit). Errors: 503 (still running at the timeout), 400. */
CBL_WARN_UNUSED cbl_status cbl_replicator_wait(cbl_replicator* replicator, int32_t timeout_ms, cbl_error* err);

/* The IDs of documents with local changes the push has not sent yet, as a JSON array in
 * change order (read from the push's checkpoint in this database; the filter and
 * doc_ids apply). Caller frees. Errors: 400 (not a push replicator, invalid handle). */
CBL_WARN_UNUSED cbl_status cbl_replicator_pending_documents(cbl_replicator* replicator, char** out_json, cbl_error* err);

/* Sets *out_pending to 1 when doc_id has a local change the push has not sent yet, else
 * 0. Errors: as above. */
CBL_WARN_UNUSED cbl_status cbl_replicator_is_document_pending(cbl_replicator* replicator, const char* doc_id,
                                              int* out_pending, cbl_error* err);

/* A revision that failed to replicate (the peer refused it, this database cannot store
 * it, a transient error of that document) does not hold the replication back: the
 * checkpoint moves past it, and the revision is kept with this database's copy of the
 * checkpoint, to be tried again at the start of every later session and run of the
 * same replication (same peer, direction, filter and doc_ids) until it goes through, the
 * source no longer has it, or it is cleared. The status counts them
 * ("documents_to_retry").
 *
 * The revisions waiting, read from the checkpoint when the replicator started and kept
 * current as it runs (also after it stopped), as a JSON array of
 * {"direction":"push"|"pull","id":..,"rev":..}. Caller frees. Errors: 400 (invalid handle). */
CBL_WARN_UNUSED cbl_status cbl_replicator_failed_documents(cbl_replicator* replicator, char** out_json, cbl_error* err);

/* Forgets the revisions waiting to be retried, both directions, in the checkpoint too:
 * later runs do not try them again. Works on a running replicator (a retry already
 * under way still finishes) and on a stopped one. Errors: 400 (invalid handle), 500
 * and others of the local database (the checkpoint could not be written). */
CBL_WARN_UNUSED cbl_status cbl_replicator_clear_failed(cbl_replicator* replicator, cbl_error* err);

/* Stops the replication, waits until its threads have ended (unless called from one of
 * its callbacks, which returns at once: it stops right after), and releases the handle.
 * NULL and invalid handles are ignored. */
void cbl_replicator_stop(cbl_replicator* replicator);

/* ------------------------------------------------------------------------------------ */
/* 12. Server: serving databases over HTTP(S) with CouchDB's REST API                   */
/* ------------------------------------------------------------------------------------ */

/* A running listener: other peers (another cblite, CouchDB's replicator, PouchDB, curl)
 * read, write and replicate the databases it serves, and may ask it to replicate one of
 * them with a peer (POST /_replicate, CouchDB's server-side replication; such jobs stop
 * with the listener). Every function is thread-safe. */
typedef struct cbl_server cbl_server;

/* Starts a listener. config_json (NULL: all defaults) is a JSON object:
 *   "host": address to bind (default "127.0.0.1"; "0.0.0.0" or "::" for every one),
 *   "port": 0 (default: any free port; read it back with cbl_server_port) to 65535,
 *   "directory": serve every database of this directory (opened on demand, closed at
 *       stop); databases can also be served by handle with cbl_server_serve,
 *   "users": {"name": "password" | {"password": "...", "roles": ["..."]}, ...} — Basic
 *       auth and /_session cookies (CouchDB's AuthSession). A name with a password alone
 *       is a server admin; with "roles", a user with those roles (a server admin only
 *       with the role "_admin"). A password may be given as CouchDB's hash
 *       ("-pbkdf2:sha256-KEY,SALT,ITERATIONS" or "-pbkdf2-KEY,SALT,ITERATIONS"); one
 *       given in clear is kept only hashed. The server admins of the directory's
 *       listener-config.json ("[admins]", /_node/_local/_config/admins, kept hashed)
 *       count too. Each database's _security object (cbl_db_security) says who else may
 *       use it, as CouchDB 3 enforces it. Without any user every client is a server
 *       admin, and only loopback clients are served unless "allow_remote_without_auth": true,
 *   "read_only": true — every write is answered 403,
 *   "uuids": {"algorithm": "sequential" (default) | "random" | "utc_random" | "utc_id",
 *       "utc_id_suffix": text} — CouchDB's UUID algorithms for /_uuids and POSTed
 *       documents; values set over /_node/_local/_config are kept in the directory's
 *       listener-config.json and take precedence,
 *   "tls": {"cert_pem_file": path, "key_pem_file": path} or {"anonymous": true,
 *       "identity_directory": path?} (a self-signed identity made once and kept there,
 *       default the served directory; see cbl_server_tls_fingerprint),
 *   "limits": {"max_body_bytes" (64 MiB; a request body other than an attachment's),
 *       "max_document_bytes" (20 MiB), "max_attachment_bytes" (one attachment, streamed
 *       to disk, alone or as a multipart/related part; default none, as CouchDB's
 *       max_attachment_size), "max_connections" (default from the file-descriptor
 *       limit, RLIMIT_NOFILE: a quarter, at least 128, is left for database files; at
 *       most 4096. At the limit the connection waiting longest — idle, or still sending
 *       its request head — is closed for a new one; 503 when all are busy),
 *       "idle_timeout_ms" (120000), "header_timeout_ms" (5000: a request head must be
 *       complete this long after its first byte), "body_timeout_ms" (20000) and
 *       "body_min_bytes_per_second" (500: a request body may take body_timeout_ms plus a
 *       second for every 500 bytes that came; a slower client is disconnected; time the
 *       listener spent not reading, its handler busy, does not count), "max_header_count"
 *       (100; more: 431)},
 *   "advertise": {"name": "Kitchen tablet", "type": "_couchdb._tcp" (the default)} —
 *       publish the listener with DNS-SD (section 15) while it runs: its name, port and a
 *       TXT record of "txtvers=1", "tls=0|1", "sha256=<certificate fingerprint>" (with
 *       TLS) and "db=<the databases served, comma-separated>" (those of the directory
 *       at start and those given to cbl_server_serve, kept current by it; continued in
 *       "db2", "db3"... past 255 bytes; "db_more=1" when the record's 1300 bytes could not
 *       hold them all). A name another host uses is replaced as DNS-SD prescribes
 *       ("Kitchen tablet #2"); see cbl_server_advertisement. Stopping the listener
 *       withdraws it.
 * A collection is served as "<db>.<scope>.<collection>" (the default one as "<db>").
 * On success *out_server is a handle for the calls below; release it with
 * cbl_server_stop. Errors: 400 (malformed or unknown configuration, address in use or
 * invalid, unreadable TLS files), 404 (directory missing), 503 ("advertise" given but no
 * Avahi: its library or daemon missing, said in the message; nothing is left running), 500. */
CBL_WARN_UNUSED cbl_status cbl_server_start(const char* config_json, cbl_server** out_server, cbl_error* err);

/* Serves the open database `db` as `name` (replacing a directory database of that
 * name); db NULL stops serving a handle given before. The handle stays the caller's:
 * closing it stops serving it. Errors: 400 (invalid name or handles). */
CBL_WARN_UNUSED cbl_status cbl_server_serve(cbl_server* server, const char* name, cbl_db* db, cbl_error* err);

/* The bound TCP port. Errors: 400 (invalid handle). */
CBL_WARN_UNUSED cbl_status cbl_server_port(cbl_server* server, uint16_t* out_port, cbl_error* err);

/* The base URL, e.g. "http://127.0.0.1:4984/". Caller frees. Errors: 400. */
CBL_WARN_UNUSED cbl_status cbl_server_url(cbl_server* server, char** out_url, cbl_error* err);

/* The SHA-256 of the TLS certificate (DER) as 64 lowercase hex digits, for clients
 * that pin it. Caller frees. Errors: 404 (not a TLS listener), 400. */
CBL_WARN_UNUSED cbl_status cbl_server_tls_fingerprint(cbl_server* server, char** out_sha256, cbl_error* err);

/* The listener's DNS-SD advertisement (its "advertise" option) as a JSON object:
 *   {"name": the name advertised (another one after a conflict), "type", "port",
 *    "txt": [the TXT items], "state": "registering" | "established" | "failed",
 *    "error": message (when failed)}.
 * Caller frees. Errors: 404 (not advertised), 400 (invalid handle). */
CBL_WARN_UNUSED cbl_status cbl_server_advertisement(cbl_server* server, char** out_json, cbl_error* err);

/* Withdraws the advertisement (if any), stops accepting connections, waits up to
 * timeout_ms for requests in flight, closes every connection and the databases it
 * opened, releases the port, and releases the handle. NULL and invalid handles are
 * ignored. */
void cbl_server_stop(cbl_server* server, int32_t timeout_ms);

/* ------------------------------------------------------------------------------------ */
/* 13. JavaScript: the engine of design documents' functions                            */
/* ------------------------------------------------------------------------------------ */

/* The limits every call of a design document's JavaScript runs under (Duktape, compiled
 * into the library): a call past its time limit or its context's memory cap fails alone
 * (that document is skipped by its view, that write refused), never the process.
 * timeout_ms 0 means no time limit; memory_bytes is per context, at least 1 MiB.
 * Defaults: 5000 ms and 64 MiB. Contexts made afterwards take the new limits. Thread-safe.
 * A design document's JavaScript reduce is called as CouchDB calls it (unlike a
 * cbl_reduce_fn): keys as [key, docid] pairs, and each value answered is the result of a
 * final rereduce of the partial results, even of one.
 * Errors: 400 (memory_bytes below 1 MiB). */
CBL_WARN_UNUSED cbl_status cbl_js_set_limits(uint32_t timeout_ms, uint64_t memory_bytes, cbl_error* err);

/* The current limits. Errors: 400 (an out pointer NULL). */
CBL_WARN_UNUSED cbl_status cbl_js_get_limits(uint32_t* out_timeout_ms, uint64_t* out_memory_bytes, cbl_error* err);

/* ------------------------------------------------------------------------------------ */
/* 14. Full-text search: full-text indexes and ranked searches                          */
/* ------------------------------------------------------------------------------------ */

/* Full-text indexes cover one or more fields of a collection's documents (dotted paths,
 * as Mango's: "a.b", "a\\.b" for a member named "a.b"; a string is indexed, an array's
 * strings are, one after the other). Text is cut into Unicode words, compared without
 * case and (Latin) diacritics by default; Porter stemming (English) and stop words are
 * options. An index is stored as CouchDB stores a text index: a member of "indexes" in a
 * design document with "language": "query", so it replicates, and one written as a
 * document defines it. It is kept current with the documents (a search sees every write
 * committed before it; deleted and purged documents leave it at once), rebuilt when its
 * definition changes and dropped with its collection. Its terms and text live in the
 * database file (encrypted with it).
 *
 * Queries: terms (`coffee milk`: both), "phrases", prefixes (`data*`), AND / OR / NOT
 * (`a NOT b`), `a NEAR b` (within 10 terms), `a NEAR/3 b`, `NEAR(a b c, 5)`, field-scoped
 * terms (`title:coffee`, `title:(a OR b)`), `+required -excluded`, and parentheses.
 * Operators are upper case. A malformed query fails with 400 and a message that ends with
 * " at position N" (N counts characters from 0): "invalid full-text query: AND needs a
 * term after it at position 7".
 *
 * Thread safety: as the other collection calls; a result is read by one thread at a time. */

/* Creates (or redefines) a full-text index by writing its design document.
 * definition_json: {"name": "n", "ddoc": "d" (optional: "_design/<name>" when absent),
 *   "fields": ["title", "body"], "analyzer" (optional): "standard" (default) | "english"
 *   (stemming and English stop words) | {"fold_diacritics": true, "stemming": false,
 *   "stop_words": ["the", ...]}, "partial_filter_selector": {...} (optional: only
 *   documents it matches are indexed)}.
 * Sets *out_json to {"result": "created" or "exists", "id": the design document's ID,
 * "name"}; caller frees. The index is built by the first search. Errors: 400 (the
 * definition; an existing design document of another language), 409 (a concurrent write
 * of the design document), 503. */
CBL_WARN_UNUSED cbl_status cbl_collection_create_text_index(cbl_collection* coll, const char* definition_json,
                                                            char** out_json, cbl_error* err);

/* Deletes a full-text index: its entry in its design document (the document too when
 * nothing else is left in it) and its stored terms. ddoc: optional (NULL: the only index
 * of that name). Errors: 400 (also a name in several design documents and no ddoc), 404
 * (no such index), 409, 503. */
CBL_WARN_UNUSED cbl_status cbl_collection_delete_text_index(cbl_collection* coll, const char* ddoc, const char* name,
                                                            cbl_error* err);

/* The full-text indexes as a JSON array, by design document then name: [{"ddoc", "name",
 * "type": "text", "partitioned": false, "def": {"fields": [{"title": "string"}],
 * "partial_filter_selector"?, "analyzer": {...}}}]. Caller frees. Errors: 400, 404, 500. */
CBL_WARN_UNUSED cbl_status cbl_collection_text_indexes(cbl_collection* coll, char** out_json, cbl_error* err);

/* Searches the full-text index `name` (of the design document "ddoc" in the request
 * when given). request_json: {"query": "coffee NEAR milk", "fields": ["title"] (optional:
 * unscoped terms match in these fields only), "selector": {...} (optional: a Mango
 * selector the documents must match too), "limit" (default 25), "skip", "bookmark" (a
 * previous page's, from cbl_query_result_search_info), "include_docs" (default false),
 * "snippets": true (default) | false | {"open": "<b>", "close": "</b>", "ellipsis": "…",
 * "tokens": 16 (1-64)}}.
 * Returns a result read with cbl_query_result_next / _next_rows / _json, best match
 * first (ties: older documents first). Each row: doc_id and source_doc_id the document's
 * ID; key_json its BM25 score (a JSON number, higher is better); value_json the snippets
 * of the fields that matched, {"title": "a <b>coffee</b> …"}, in the index's field order
 * ({} with "snippets": false); doc_json the document with include_docs; sequence the
 * document's sequence. The page is computed when the call runs. Release with
 * cbl_query_result_release. Errors: 400 (request; a malformed query, with its position;
 * a field the index does not have), 404 (no such index), 500, 503. */
CBL_WARN_UNUSED cbl_status cbl_collection_search(cbl_collection* coll, const char* name, const char* request_json,
                                                 cbl_query_result** out_result, cbl_error* err);

/* What a search's result says beside its rows, as JSON {"bookmark": the next page's (pass
 * it as "bookmark"; null when the page is empty), "total_rows": the rows of this page}.
 * Caller frees. Errors: 400 (NULL out_json, a result not made by cbl_collection_search). */
CBL_WARN_UNUSED cbl_status cbl_query_result_search_info(cbl_query_result* result, char** out_json, cbl_error* err);

/* ------------------------------------------------------------------------------------ */
/* 15. Discovery: finding peers on the network (DNS-SD through Avahi)                   */
/* ------------------------------------------------------------------------------------ */

/* Peers find each other with DNS Service Discovery over multicast DNS, the way Couchbase
 * Lite used Bonjour: a listener advertises itself (cbl_server_start's "advertise"), a
 * browser reports the peers of a service type as they come and go. On Linux this goes
 * through the system's Avahi daemon over D-Bus; libavahi-client.so.3 is loaded when a
 * browser or an advertisement starts, so the library itself needs neither. Without
 * them, starting fails with 503 and a message saying which is missing; nothing else is
 * affected. */
typedef struct cbl_browser cbl_browser;

/* A peer event as a JSON object, valid during the call only:
 *   {"event": "appeared" | "updated", "peer": {"name", "type", "domain", "host" (its
 *       mDNS name, e.g. "tablet.local"), "port", "addresses": [IPv4 first, then IPv6],
 *       "url": "http[s]://address:port/" (https when its TXT says TLS), "databases": [..],
 *       "tls": bool, "sha256": fingerprint to pin (when advertised), "txt": {key: value}}}
 *   {"event": "disappeared", "peer": {"name", "type", "domain"}}
 *   {"event": "failed", "message": ..}   (the daemon went away; nothing follows)
 * "appeared" comes once the peer is resolved; "updated" when it is resolved again with
 * other addresses, port or TXT (a peer seen on several interfaces or over IPv4 and IPv6
 * is one peer); "disappeared" when it withdrew everywhere. Called on the browser's own
 * thread, one event at a time, never while a lock of the library is held; it may call
 * any function, cbl_browser_stop on this browser included (which then returns at once). */
typedef void (*cbl_browser_fn)(void* context, const char* event_json);

/* Starts browsing for services of `type` (NULL: "_couchdb._tcp", cblite's listeners and
 * CouchDB-protocol peers) in the local network's default domain ("local"). Peers already
 * there are reported as they are resolved, usually within a second. On success
 * *out_browser is a handle; release it with cbl_browser_stop. Errors: 400 (a type that is
 * not "_name._tcp" / "_name._udp", NULL callback), 503 (no Avahi library, or no Avahi
 * daemon reachable on the system D-Bus: the message says which). */
CBL_WARN_UNUSED cbl_status cbl_browser_start(const char* type, cbl_browser_fn callback, void* context,
                             cbl_browser** out_browser, cbl_error* err);

/* The peers seen now, as a JSON array of the "peer" objects of cbl_browser_fn, by name.
 * Caller frees. Errors: 400 (invalid handle). */
CBL_WARN_UNUSED cbl_status cbl_browser_peers(cbl_browser* browser, char** out_json, cbl_error* err);

/* Stops browsing, waits until no call of its callback runs (unless called from the
 * callback, which returns at once: no event follows), and releases the handle. NULL and
 * invalid handles are ignored. */
void cbl_browser_stop(cbl_browser* browser);

#ifdef __cplusplus
}
#endif

#endif /* CBLITE_H */
