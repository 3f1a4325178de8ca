/*
 * replication_crash_test.c — replication under SIGKILL of either peer.
 *
 * Three databases in one temp dir: A (the only one written by the test: documents, updates,
 * deletions, conflict branches made with cbl_collection_docs_put_existing, attachments of 10-200 KB),
 * B (served by a listener; alone in the subfolder served/) and C. Each round the driver
 * starts two children — the driver re-executed (fork + exec of /proc/self/exe), never the
 * library across fork:
 *   --serve DIR NAME PORT handle|directory
 *                              starts a listener (cbl_server_start) serving NAME — the open
 *                              handle (cbl_server_serve) or DIR as its "directory" —, prints
 *                              "PORT n", stops cleanly (cbl_server_stop) when stdin closes;
 *   --replicate DIR NAME URL push|pull RETRIES BATCH
 *                              a one-shot replication of NAME with the served B (batch_size
 *                              BATCH, a fixed "remote_uuid" so the checkpoints carry over
 *                              from round to round although the port changes), printing each
 *                              status ("S {...}") and the final one ("F {...}"); exit 0 on
 *                              success, 2 when the status has an "error", 3 on document
 *                              failures.
 * A round is a push A -> B or a pull C <- B. At a seeded moment — a delay after the start,
 * or once the replicator reports a seeded number of changes handled — the driver SIGKILLs
 * the replicator, the server, or both; or kills the server and restarts it on the same port
 * (directory mode: B is served from the first accepted connection), where the replicator,
 * retrying meanwhile, must then finish successfully. Afterwards it checks both
 * databases of the round: cbl_db_integrity_check, every attachment of the target readable
 * (content present, digest verified), no document the source never had; and whenever the
 * replicator finished successfully, that the target now has exactly the source's leaf
 * revisions and current revisions. Between rounds A gets more changes (new documents,
 * updates, deletions, resurrections, new conflict branches, updates and deletions of losing
 * branches, attachments added/replaced/removed), and now and then a database is compacted.
 *
 * At the end: push A -> B and pull C <- B without kills (both must succeed), then for every
 * document A, B and C must hold the same leaf revisions (changes feed, all_revs), the same
 * current revision and deletion state, the same body for every leaf (open_revs: JSON and
 * attachment stubs), the same attachment bytes; equal cbl_db_count; integrity checks pass;
 * and a further push and pull find nothing to do ("total":0, documents_pushed/pulled 0):
 * nothing was lost, duplicated or left unacknowledged in a checkpoint.
 *
 *   replication_crash_test [--kills N] [--seed S] [--docs D] [--batch B] [--max-delay-ms M]
 *                          [--watchdog SECONDS] [--dir DIR] [--verbose]
 *
 * Ends with "N passed, N failed"; exit 1 on any failure.
 */
#include "rel_common.h"

#include <poll.h>

#define REMOTE_UUID "reliability-peer-b"
#define SERVED_NAME "b"
#define OPEN_OPTS "{\"busy_timeout_ms\":20000}"
#define N_ATT_NAMES 3

enum { DB_A = 0, DB_B = 1, DB_C = 2 };
static const char* const DBN[3] = { "a", "b", "c" };
static const char* const DBLABEL[3] = { "A", "B", "C" };

static int g_verbose;
static char g_self[1024];
static char g_dir[1024];
static char g_dbdir[3][1100];   /* A and C in g_dir, B alone in g_dir/served (a listener's "directory") */
static int g_batch = 50;

/* ======================================================================================= */
/* Children                                                                                  */
/* ======================================================================================= */

/* mode "handle": opens NAME and serves that handle (cbl_server_serve), which the listener
 * only knows once started — fine when the driver waits for the port line before starting
 * a replicator. mode "directory": the listener serves DIR's databases (opened on demand)
 * from its first accepted connection — what a restart on a fixed port needs, with a
 * replicator already retrying against it. */
static int serve_main(const char* dir, const char* name, int port, const char* mode) {
    cbl_db* db = NULL;
    cbl_error e;
    int by_handle = strcmp(mode, "directory") != 0;
    if (by_handle && cbl_db_open(name, dir, OPEN_OPTS, &db, &e) != CBL_OK) {
        fprintf(stderr, "serve: open %s: %d %s\n", name, e.code, e.message);
        return 2;
    }
    char cfg[1400];
    if (by_handle) snprintf(cfg, sizeof cfg, "{\"port\":%d}", port);
    else snprintf(cfg, sizeof cfg, "{\"port\":%d,\"directory\":\"%s\"}", port, dir);
    cbl_server* s = NULL;
    if (cbl_server_start(cfg, &s, &e) != CBL_OK) {
        fprintf(stderr, "serve: cbl_server_start(%s): %d %s\n", cfg, e.code, e.message);
        return 2;
    }
    if (by_handle && cbl_server_serve(s, name, db, &e) != CBL_OK) {
        fprintf(stderr, "serve: cbl_server_serve: %d %s\n", e.code, e.message);
        return 2;
    }
    uint16_t p = 0;
    if (cbl_server_port(s, &p, &e) != CBL_OK) { fprintf(stderr, "serve: port: %d\n", e.code); return 2; }
    printf("PORT %u\n", (unsigned)p);
    fflush(stdout);
    /* Until the driver closes our stdin (or dies): then a clean stop. */
    char buf[64];
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    cbl_server_stop(s, 5000);
    if (by_handle && cbl_db_close(db, &e) != CBL_OK) { fprintf(stderr, "serve: close: %d %s\n", e.code, e.message); return 3; }
    return 0;
}

static void on_status(void* ctx, const char* status) {
    (void)ctx;
    printf("S %s\n", status);
    fflush(stdout);
}
static void on_documents(void* ctx, const char* docs) {
    (void)ctx;
    if (strstr(docs, "\"error\"")) { printf("D %s\n", docs); fflush(stdout); }
}

static int replicate_main(const char* dir, const char* name, const char* url, const char* direction,
                          int retries, int batch) {
    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    cbl_error e;
    if (cbl_db_open(name, dir, OPEN_OPTS, &db, &e) != CBL_OK) {
        printf("X open %s: %d %s\n", name, e.code, e.message);
        return 4;
    }
    if (cbl_db_default_collection(db, &c, &e) != CBL_OK) { printf("X collection: %d\n", e.code); return 4; }
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "{\"url\":\"%s\",\"direction\":\"%s\",\"remote_uuid\":\"" REMOTE_UUID "\",\"batch_size\":%d,"
             "\"max_retries\":%d,\"retry_initial_ms\":50,\"retry_max_ms\":1000,\"timeout_ms\":30000}",
             url, direction, batch, retries);
    cbl_replicator* r = NULL;
    if (cbl_replicator_start(c, cfg, on_status, on_documents, NULL, &r, &e) != CBL_OK) {
        printf("X cbl_replicator_start(%s): %d %s\n", cfg, e.code, e.message);
        return 4;
    }
    cbl_status ws = cbl_replicator_wait(r, -1, &e);
    char* status = NULL;
    if (ws != CBL_OK || cbl_replicator_status(r, &status, &e) != CBL_OK) {
        printf("X wait/status: %d %s\n", e.code, e.message);
        return 4;
    }
    printf("F %s\n", status);
    fflush(stdout);
    int rc = strstr(status, "\"error\"") ? 2 : rel_json_int(status, "document_failures", 0) != 0 ? 3 : 0;
    cbl_free(status);
    cbl_replicator_stop(r);
    cbl_collection_release(c);
    if (cbl_db_close(db, &e) != CBL_OK) { printf("X close: %d %s\n", e.code, e.message); return 4; }
    return rc;
}

/* ======================================================================================= */
/* Driver: child processes                                                                  */
/* ======================================================================================= */

typedef struct {
    pid_t pid;
    int out_fd;          /* its stdout (and for the replicator its stderr) */
    int ctl_fd;          /* server: its stdin; closing it stops the server cleanly */
    int exited, status;  /* reaped, waitpid status */
    char* log; size_t len, cap;
    size_t parsed;       /* replicator: how much of the log was scanned for status lines */
    long long completed; /* replicator: the last "completed" it reported */
    int busy;            /* replicator: it reported activity "busy" */
    char final[1024];    /* replicator: its "F" status line */
    double t_start, t_exit;
} child;

static pid_t g_live[8];
static char g_watchdog_msg[1400];

static void track(pid_t pid, int on) {
    for (int i = 0; i < 8; i++)
        if (on ? g_live[i] == 0 : g_live[i] == pid) { g_live[i] = on ? pid : 0; return; }
}

static void on_alarm(int sig) {
    (void)sig;
    if (write(2, g_watchdog_msg, strlen(g_watchdog_msg)) < 0) {}
    for (int i = 0; i < 8; i++) if (g_live[i] > 0) kill(g_live[i], SIGKILL);
    char line[64];
    int n = snprintf(line, sizeof line, "%d passed, %d failed\n", g_pass, g_fail + 1);
    if (write(1, line, (size_t)n) < 0) {}
    _exit(1);
}

static void cloexec(int fd) { fcntl(fd, F_SETFD, FD_CLOEXEC); }

/* Starts `self args...` with stdin from in_fd (or /dev/null), stdout to out_fd, stderr to
 * err_fd (-1: stdout). */
static pid_t spawn(char* const argv[], int in_fd, int out_fd, int err_fd) {
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(2); }
    if (pid == 0) {
        if (in_fd < 0) in_fd = open("/dev/null", O_RDONLY);
        dup2(in_fd, 0);
        dup2(out_fd, 1);
        dup2(err_fd >= 0 ? err_fd : out_fd, 2);
        execv(g_self, argv);
        _exit(127);
    }
    track(pid, 1);
    return pid;
}

static void child_append(child* ch, const char* data, size_t n) {
    if (ch->len + n + 1 > ch->cap) {
        ch->cap = (ch->len + n + 1) * 2;
        ch->log = realloc(ch->log, ch->cap);
    }
    memcpy(ch->log + ch->len, data, n);
    ch->len += n;
    ch->log[ch->len] = 0;
}

/* Reads what the child wrote (waiting up to timeout_ms for something), scans new status
 * lines, reaps it when it has ended. */
static void child_pump(child* ch, int timeout_ms) {
    if (ch->out_fd >= 0) {
        struct pollfd pf = { ch->out_fd, POLLIN, 0 };
        if (poll(&pf, 1, timeout_ms) > 0) {
            char buf[8192];
            ssize_t n = read(ch->out_fd, buf, sizeof buf);
            if (n > 0) child_append(ch, buf, (size_t)n);
            else if (n == 0 || errno != EINTR) { close(ch->out_fd); ch->out_fd = -1; }
        }
    } else if (timeout_ms > 0) rel_sleep_us(timeout_ms * 1000L);
    while (ch->log) {
        char* nl = strchr(ch->log + ch->parsed, '\n');
        if (!nl) break;
        const char* line = ch->log + ch->parsed;
        if (!strncmp(line, "S {", 3)) {
            ch->completed = rel_json_int(line, "completed", ch->completed);
            if (strstr(line, "\"activity\":\"busy\"") && nl - line < 400) ch->busy = 1;
        } else if (!strncmp(line, "F {", 3)) {
            size_t l = (size_t)(nl - line) - 2;
            if (l >= sizeof ch->final) l = sizeof ch->final - 1;
            memcpy(ch->final, line + 2, l);
            ch->final[l] = 0;
        }
        ch->parsed = (size_t)(nl - ch->log) + 1;
    }
    if (!ch->exited && ch->pid > 0 && waitpid(ch->pid, &ch->status, WNOHANG) == ch->pid) {
        ch->exited = 1;
        ch->t_exit = rel_now();
        track(ch->pid, 0);
    }
}

/* Waits (draining output) until the child has ended; 0 when it did not within timeout_s. */
static int child_wait(child* ch, double timeout_s) {
    double end = rel_now() + timeout_s;
    while (!ch->exited || ch->out_fd >= 0) {
        if (rel_now() > end) return 0;
        child_pump(ch, 20);
        if (ch->exited && ch->out_fd >= 0) {           /* drain what is left, without blocking */
            struct pollfd pf = { ch->out_fd, POLLIN, 0 };
            if (poll(&pf, 1, 0) <= 0) { close(ch->out_fd); ch->out_fd = -1; }
        }
    }
    return 1;
}

static void child_kill(child* ch) {
    if (ch->pid > 0 && !ch->exited) kill(ch->pid, SIGKILL);
}

static void child_free(child* ch) {
    if (ch->out_fd >= 0) close(ch->out_fd);
    if (ch->ctl_fd >= 0) close(ch->ctl_fd);
    free(ch->log);
    memset(ch, 0, sizeof *ch);
    ch->out_fd = ch->ctl_fd = -1;
}

static int killed_by_sigkill(const child* ch) { return WIFSIGNALED(ch->status) && WTERMSIG(ch->status) == SIGKILL; }
static int exit_code(const child* ch) { return WIFEXITED(ch->status) ? WEXITSTATUS(ch->status) : -1; }

static void print_log_tail(const char* what, const child* ch) {
    if (!ch->log || !ch->len) { fprintf(stderr, "  (%s wrote nothing)\n", what); return; }
    const char* p = ch->log + ch->len;
    int lines = 0;
    while (p > ch->log && lines < 12) { p--; if (*p == '\n' && p != ch->log + ch->len - 1) lines++; }
    fprintf(stderr, "  --- %s output (tail) ---\n%s  ---\n", what, p);
}

/* Starts a server child for B on `port` (0: any); fills ch; 1 when it printed its port. */
static int start_server(child* ch, int port, int* out_port, int directory_mode) {
    memset(ch, 0, sizeof *ch);
    ch->out_fd = ch->ctl_fd = -1;
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) { perror("pipe"); exit(2); }
    cloexec(in[1]); cloexec(out[0]);
    char logpath[1200];
    snprintf(logpath, sizeof logpath, "%s/server.log", g_dir);
    int errfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    char a_port[16];
    snprintf(a_port, sizeof a_port, "%d", port);
    char* argv[] = { g_self, "--serve", g_dbdir[DB_B], (char*)DBN[DB_B], a_port,
                     directory_mode ? "directory" : "handle", NULL };
    ch->pid = spawn(argv, in[0], out[1], errfd);
    close(in[0]); close(out[1]); close(errfd);
    ch->ctl_fd = in[1];
    ch->out_fd = out[0];
    double end = rel_now() + 30;
    while (rel_now() < end) {
        child_pump(ch, 20);
        const char* p = ch->log ? strstr(ch->log, "PORT ") : NULL;
        if (p && strchr(p, '\n')) { *out_port = atoi(p + 5); return 1; }
        if (ch->exited || ch->out_fd < 0) break;
    }
    return 0;
}

static void start_replicator(child* ch, int local, int port, int push, int retries) {
    memset(ch, 0, sizeof *ch);
    ch->out_fd = ch->ctl_fd = -1;
    int out[2];
    if (pipe(out) != 0) { perror("pipe"); exit(2); }
    cloexec(out[0]);
    char url[128], a_retries[16], a_batch[16];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/" SERVED_NAME, port);
    snprintf(a_retries, sizeof a_retries, "%d", retries);
    snprintf(a_batch, sizeof a_batch, "%d", g_batch);
    char* argv[] = { g_self, "--replicate", g_dbdir[local], (char*)DBN[local], url, push ? "push" : "pull",
                     a_retries, a_batch, NULL };
    ch->t_start = rel_now();
    ch->pid = spawn(argv, -1, out[1], -1);
    close(out[1]);
    ch->out_fd = out[0];
}

/* Stops a server child cleanly (closes its stdin); it must exit 0 in time. */
static void stop_server(child* srv, int round) {
    if (srv->exited) return;
    if (srv->ctl_fd >= 0) { close(srv->ctl_fd); srv->ctl_fd = -1; }
    if (!child_wait(srv, 30)) {
        rel_failf("round %d: the server did not stop within 30 s of a clean stop request", round);
        child_kill(srv);
        child_wait(srv, 10);
    } else if (exit_code(srv) != 0) {
        rel_failf("round %d: the server's clean stop ended with status 0x%x (see %s/server.log)", round, srv->status, g_dir);
    } else g_pass++;
}

/* A whole replication without kills; returns 1 on success and copies its final status. */
static int run_replication(int local, int push, const char* what, char* final, size_t finalsz) {
    child srv, rep;
    int port = 0, ok = 0;
    if (!start_server(&srv, 0, &port, 0)) {
        rel_failf("%s: the server did not start (see %s/server.log)", what, g_dir);
        print_log_tail("server", &srv);
        child_kill(&srv); child_wait(&srv, 10); child_free(&srv);
        return 0;
    }
    start_replicator(&rep, local, port, push, 8);
    if (!child_wait(&rep, 300)) {
        rel_failf("%s: the replication did not end within 300 s", what);
        child_kill(&rep);
        child_wait(&rep, 10);
    } else if (exit_code(&rep) != 0) {
        rel_failf("%s: the replication failed (status 0x%x): %s", what, rep.status, rep.final);
        print_log_tail("replicator", &rep);
    } else { ok = 1; g_pass++; }
    if (final) snprintf(final, finalsz, "%s", rep.final);
    stop_server(&srv, 0);
    child_free(&rep);
    child_free(&srv);
    return ok;
}

/* ======================================================================================= */
/* Driver: writing into A                                                                    */
/* ======================================================================================= */

static int g_ndocs;                 /* documents ever created in A: doc-00000 .. */
static unsigned char* g_att_used;   /* per document: ever had an attachment */
static int g_att_cap;
static unsigned char* g_blob;       /* last attachment content (reused now and then: dedup) */
static size_t g_blob_len;
static long long g_ops[12];         /* what was done to A, by kind */
enum { OP_NEW, OP_UPDATE, OP_RESURRECT, OP_DELETE, OP_BRANCH, OP_BRANCH_DEL, OP_UPD_LOSER,
       OP_DEL_LOSER, OP_ATT_SET, OP_ATT_DEL, OP_COMPACT };

static void doc_id(char* out, size_t sz, int i) { snprintf(out, sz, "doc-%05d", i); }

static void make_body(char* out, size_t sz, rel_rng* r, int n, long long v) {
    char pad[420];
    int plen = 100 + (int)rel_below(r, 300);
    for (int i = 0; i < plen; i++) pad[i] = (char)('a' + rel_below(r, 26));
    pad[plen] = 0;
    snprintf(out, sz, "{\"type\":\"rel\",\"n\":%d,\"v\":%lld,\"pad\":\"%s\",\"list\":[%u,%u,{\"k\":\"%c\"}],"
             "\"ok\":%s,\"nested\":{\"f\":%u.25,\"s\":\"\\u00e9t\\u00e9\"}}",
             n, v, pad, rel_below(r, 1000), rel_below(r, 1000), (char)('A' + rel_below(r, 26)),
             rel_below(r, 2) ? "true" : "false", rel_below(r, 100));
}

static void ensure_att_cap(int n) {
    if (n <= g_att_cap) return;
    int cap = n * 2 + 64;
    g_att_used = realloc(g_att_used, (size_t)cap);
    memset(g_att_used + g_att_cap, 0, (size_t)(cap - g_att_cap));
    g_att_cap = cap;
}

static void random_hex(char* out, int n, rel_rng* r) {
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < n; i++) out[i] = hx[rel_below(r, 16)];
    out[n] = 0;
}

/* Current revision of doc i in A: 1 (live), 2 (tombstone), 0 (absent). */
static int current_rev(cbl_collection* c, int i, char* rev, size_t revsz) {
    char id[32], *json = NULL;
    doc_id(id, sizeof id, i);
    cbl_status st = cbl_doc_get(c, id, CBL_GET_DELETED, &json, NULL);
    if (st != CBL_OK) { rev[0] = 0; if (st != CBL_NOT_FOUND) rel_failf("A: get %s -> %d", id, st); return 0; }
    rel_json_str(json, "_rev", rev, revsz);
    int del = rel_json_true(json, "_deleted");
    cbl_free(json);
    return del ? 2 : 1;
}

static void op_new(cbl_collection* c, rel_rng* r) {
    char id[32], body[1024];
    doc_id(id, sizeof id, g_ndocs);
    make_body(body, sizeof body, r, g_ndocs, 1);
    cbl_error e;
    if (cbl_doc_put(c, id, body, NULL, 0, NULL, NULL, &e) != CBL_OK) rel_failf("A: create %s: %d %s", id, e.code, e.message);
    else { g_ndocs++; ensure_att_cap(g_ndocs); g_ops[OP_NEW]++; }
}

static void op_update(cbl_collection* c, rel_rng* r, int i) {
    char id[32], body[1024], rev[128];
    int state = current_rev(c, i, rev, sizeof rev);
    if (!state) return;
    doc_id(id, sizeof id, i);
    make_body(body, sizeof body, r, i, (long long)rel_next(r) % 100000);
    cbl_error e;
    if (cbl_doc_put(c, id, body, rev, 0, NULL, NULL, &e) != CBL_OK) rel_failf("A: update %s on %s: %d %s", id, rev, e.code, e.message);
    else g_ops[state == 2 ? OP_RESURRECT : OP_UPDATE]++;
}

static void op_delete(cbl_collection* c, int i) {
    char id[32], rev[128];
    if (current_rev(c, i, rev, sizeof rev) != 1) return;
    doc_id(id, sizeof id, i);
    cbl_error e;
    if (cbl_doc_delete(c, id, NULL, NULL, &e) != CBL_OK) rel_failf("A: delete %s: %d %s", id, e.code, e.message);
    else g_ops[OP_DELETE]++;
}

/* A conflicting branch made elsewhere (the replicator's path): grafted onto a kept
 * ancestor of the current revision, or a new root with a partial history. */
static void op_branch(cbl_collection* c, rel_rng* r, int i) {
    char id[32], *hist = NULL;
    doc_id(id, sizeof id, i);
    if (cbl_doc_history(c, id, NULL, &hist, NULL) != CBL_OK) return;
    static char items[64][80];
    int n = rel_json_str_array(hist, items, 64);
    cbl_free(hist);
    int depth = 1 + (int)rel_below(r, 3);
    int graft = n >= 2 && rel_below(r, 3) != 0;
    int k = graft ? 1 + (int)rel_below(r, (uint32_t)(n - 1)) : 0;
    long start = graft ? rel_rev_gen(items[k]) + depth : depth + (long)rel_below(r, 3);
    char ids[64 * 84] = "", dig[48], first[48] = "";
    size_t pos = 0;
    for (int d = 0; d < depth; d++) {
        random_hex(dig, 40, r);
        if (d == 0) snprintf(first, sizeof first, "%s", dig);
        pos += (size_t)snprintf(ids + pos, sizeof ids - pos, "%s\"%s\"", d ? "," : "", dig);
    }
    for (int j = k; graft && j < n; j++) {
        const char* dash = strchr(items[j], '-');
        pos += (size_t)snprintf(ids + pos, sizeof ids - pos, ",\"%s\"", dash ? dash + 1 : items[j]);
    }
    int del = rel_below(r, 5) == 0;
    char body[1024], req[8192];
    if (del) snprintf(body, sizeof body, "\"_deleted\":true,\"branch\":%d", depth);
    else {
        make_body(body, sizeof body, r, i, -depth);
        memmove(body, body + 1, strlen(body));          /* drop the '{' */
        body[strlen(body) - 1] = 0;                      /* and the '}' */
    }
    snprintf(req, sizeof req, "[{\"_id\":\"%s\",\"_rev\":\"%ld-%s\",\"_revisions\":{\"start\":%ld,\"ids\":[%s]},%s}]",
             id, start, first, start, ids, body);
    char* res = NULL;
    cbl_error e;
    if (cbl_collection_docs_put_existing(c, req, &res, &e) != CBL_OK || !res || strstr(res, "\"error\""))
        rel_failf("A: put_existing %s: %d %s %s", id, e.code, e.message, res ? res : "");
    else g_ops[del ? OP_BRANCH_DEL : OP_BRANCH]++;
    cbl_free(res);
}

/* Updates or deletes a losing (undeleted) leaf of a conflicted document. */
static void op_loser(cbl_collection* c, rel_rng* r, int i, int del) {
    char id[32], *json = NULL;
    doc_id(id, sizeof id, i);
    if (cbl_doc_conflicts(c, id, &json, NULL) != CBL_OK) return;
    static char leaves[64][80];
    int n = rel_json_str_array(json, leaves, 64);
    cbl_free(json);
    if (n < 2) return;
    const char* loser = leaves[1 + rel_below(r, (uint32_t)(n - 1))];
    cbl_error e;
    if (del) {
        if (cbl_doc_delete(c, id, loser, NULL, &e) != CBL_OK) rel_failf("A: delete loser %s %s: %d %s", id, loser, e.code, e.message);
        else g_ops[OP_DEL_LOSER]++;
    } else {
        char body[1024];
        make_body(body, sizeof body, r, i, 777);
        if (cbl_doc_put(c, id, body, loser, CBL_PUT_ALLOW_CONFLICT, NULL, NULL, &e) != CBL_OK)
            rel_failf("A: update loser %s %s: %d %s", id, loser, e.code, e.message);
        else g_ops[OP_UPD_LOSER]++;
    }
}

static void op_attach(cbl_db* db, cbl_collection* c, rel_rng* r, int i) {
    char id[32], rev[128], name[16];
    int state = current_rev(c, i, rev, sizeof rev);
    if (!state) return;
    doc_id(id, sizeof id, i);
    if (!g_blob_len || rel_below(r, 3) != 0) {
        g_blob_len = 10 * 1024 + rel_below(r, 190 * 1024);
        g_blob = realloc(g_blob, g_blob_len + 8);
        for (size_t k = 0; k < g_blob_len; k += 8) { uint64_t v = rel_next(r); memcpy(g_blob + k, &v, 8); }
    }
    char* digest = NULL;
    cbl_error e;
    if (cbl_db_blob_put(db, g_blob, g_blob_len, &digest, &e) != CBL_OK) { rel_failf("A: blob_put: %d %s", e.code, e.message); return; }
    snprintf(name, sizeof name, "att-%u.bin", rel_below(r, N_ATT_NAMES));
    const char* type = rel_below(r, 2) ? "application/octet-stream" : "image/png";
    if (cbl_doc_set_attachment(c, id, state == 1 ? rev : NULL, name, type, digest, NULL, &e) != CBL_OK)
        rel_failf("A: set_attachment %s %s: %d %s", id, name, e.code, e.message);
    else { g_att_used[i] = 1; g_ops[OP_ATT_SET]++; }
    cbl_free(digest);
}

static void op_detach(cbl_collection* c, rel_rng* r) {
    int with[64], n = 0;
    for (int i = 0; i < g_ndocs && n < 64; i++) if (g_att_used[i]) with[n++] = i;
    if (!n) return;
    int i = with[rel_below(r, (uint32_t)n)];
    char id[32], *json = NULL;
    doc_id(id, sizeof id, i);
    if (cbl_doc_attachment_names(c, id, &json, NULL) != CBL_OK) return;
    static char names[16][80];
    int k = rel_json_str_array(json, names, 16);
    cbl_free(json);
    if (!k) return;
    cbl_error e;
    if (cbl_doc_remove_attachment(c, id, NULL, names[rel_below(r, (uint32_t)k)], NULL, &e) != CBL_OK)
        rel_failf("A: remove_attachment %s: %d %s", id, e.code, e.message);
    else g_ops[OP_ATT_DEL]++;
}

/* `n` random changes to A. */
static void mutate_a(rel_rng* r, int n) {
    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    cbl_error e;
    if (cbl_db_open(DBN[DB_A], g_dbdir[DB_A], OPEN_OPTS, &db, &e) != CBL_OK || cbl_db_default_collection(db, &c, &e) != CBL_OK) {
        rel_failf("open A: %d %s", e.code, e.message);
        return;
    }
    int in_tx = rel_below(r, 2);                 /* half the time: all of it in one transaction */
    if (in_tx && cbl_db_begin(db, &e) != CBL_OK) { rel_failf("A: begin: %d", e.code); in_tx = 0; }
    for (int k = 0; k < n; k++) {
        uint32_t p = rel_below(r, 100);
        int i = g_ndocs ? (int)rel_below(r, (uint32_t)g_ndocs) : 0;
        if (p < 25 || !g_ndocs) op_new(c, r);
        else if (p < 60) op_update(c, r, i);
        else if (p < 70) op_delete(c, i);
        else if (p < 77) op_branch(c, r, i);
        else if (p < 84) {                        /* work on a conflicted doc, if one is near */
            for (int t = 0; t < 40; t++) {
                int j = (i + t * 37) % g_ndocs;
                char did[32], *js = NULL;
                doc_id(did, sizeof did, j);
                if (cbl_doc_conflicts(c, did, &js, NULL) == CBL_OK && strchr(js, ',')) {
                    cbl_free(js);
                    op_loser(c, r, j, rel_below(r, 3) == 0);
                    break;
                }
                cbl_free(js);
            }
        }
        else if (p < 92) op_attach(db, c, r, i);
        else if (p < 95) op_detach(c, r);
        else op_update(c, r, i);
    }
    if (in_tx && cbl_db_commit(db, &e) != CBL_OK) rel_failf("A: commit: %d %s", e.code, e.message);
    cbl_collection_release(c);
    if (cbl_db_close(db, &e) != CBL_OK) rel_failf("close A: %d", e.code);
}

/* The initial content of A: `ndocs` documents saved in batches, then updates, deletions,
 * conflicts and attachments. */
static void fill_a(rel_rng* r, int ndocs) {
    cbl_db* db = NULL;
    cbl_collection* c = NULL;
    cbl_error e;
    if (cbl_db_open(DBN[DB_A], g_dbdir[DB_A], OPEN_OPTS, &db, &e) != CBL_OK || cbl_db_default_collection(db, &c, &e) != CBL_OK) {
        rel_failf("create A: %d %s", e.code, e.message);
        exit(rel_summary());
    }
    ensure_att_cap(ndocs);
    char* batch = malloc(100 * 1100 + 16);
    for (int lo = 0; lo < ndocs; lo += 100) {
        size_t pos = 0;
        batch[pos++] = '[';
        for (int i = lo; i < ndocs && i < lo + 100; i++) {
            char body[1024], id[32];
            doc_id(id, sizeof id, i);
            make_body(body, sizeof body, r, i, 1);
            pos += (size_t)sprintf(batch + pos, "%s{\"_id\":\"%s\",%s", i > lo ? "," : "", id, body + 1);
        }
        batch[pos++] = ']';
        batch[pos] = 0;
        char* res = NULL;
        if (cbl_collection_docs_save(c, batch, &res, &e) != CBL_OK || strstr(res, "\"error\""))
            rel_failf("A: docs_save: %d %s %.200s", e.code, e.message, res ? res : "");
        cbl_free(res);
    }
    free(batch);
    g_ndocs = ndocs;
    g_ops[OP_NEW] += ndocs;
    if (cbl_db_begin(db, &e) != CBL_OK) rel_failf("A: begin: %d", e.code);
    for (int i = 0; i < ndocs; i++) {
        uint32_t p = rel_below(r, 100);
        if (p < 20) { int u = 1 + (int)rel_below(r, 5); while (u--) op_update(c, r, i); }
        else if (p < 25) op_delete(c, i);
        else if (p < 28) { op_branch(c, r, i); if (rel_below(r, 2)) op_branch(c, r, i); }
    }
    if (cbl_db_commit(db, &e) != CBL_OK) rel_failf("A: commit: %d", e.code);
    int natt = ndocs / 150 < 4 ? 4 : ndocs / 150;
    for (int k = 0; k < natt; k++) {
        int i = (int)rel_below(r, (uint32_t)ndocs);
        op_attach(db, c, r, i);
        if (rel_below(r, 3) == 0) op_attach(db, c, r, i);
    }
    cbl_collection_release(c);
    if (cbl_db_close(db, NULL) != CBL_OK) rel_failf("A: close");
}

/* ======================================================================================= */
/* Driver: reading and comparing databases                                                  */
/* ======================================================================================= */

typedef struct { char id[32]; char cur[160]; int deleted, has_cur, nleaves; char* leaves; } dstate;
typedef struct { dstate* d; int n; } dbstate;

static int cmp_dstate(const void* a, const void* b) { return strcmp(((const dstate*)a)->id, ((const dstate*)b)->id); }
static int cmp_str(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

static void free_state(dbstate* s) {
    for (int i = 0; i < s->n; i++) free(s->d[i].leaves);
    free(s->d);
    s->d = NULL; s->n = 0;
}

static int copy_quoted(const char* p, char* out, size_t outsz) {    /* p after the opening quote */
    size_t n = 0;
    while (p[n] && p[n] != '"') n++;
    if (n >= outsz) return 0;
    memcpy(out, p, n);
    out[n] = 0;
    return 1;
}

/* Every document's leaves (changes feed, all_revs) and current revision (all_docs). */
static int load_state(cbl_collection* c, dbstate* s, const char* label) {
    memset(s, 0, sizeof *s);
    char* json = NULL;
    cbl_error e;
    if (cbl_collection_changes(c, 0, "{\"all_revs\":true}", &json, &e) != CBL_OK) {
        rel_failf("%s: changes feed: %d %s", label, e.code, e.message);
        return 0;
    }
    int cap = 1024;
    s->d = calloc((size_t)cap, sizeof *s->d);
    const char* p = json;
    while ((p = strstr(p, "{\"seq\":")) != NULL) {
        const char* idp = strstr(p, "\"id\":\"");
        const char* ch = idp ? strstr(idp, "\"changes\":[") : NULL;
        const char* end = ch ? strchr(ch, ']') : NULL;
        if (!end) { rel_failf("%s: unparsable changes feed near %.80s", label, p); break; }
        if (s->n == cap) { cap *= 2; s->d = realloc(s->d, (size_t)cap * sizeof *s->d); }
        dstate* d = &s->d[s->n++];
        memset(d, 0, sizeof *d);
        copy_quoted(idp + 6, d->id, sizeof d->id);
        char* revs[256];
        int nr = 0;
        size_t total = 1;
        for (const char* q = ch; (q = strstr(q, "\"rev\":\"")) != NULL && q < end && nr < 256; q += 7) {
            char rev[160];
            copy_quoted(q + 7, rev, sizeof rev);
            revs[nr++] = strdup(rev);
            total += strlen(rev) + 1;
        }
        qsort(revs, (size_t)nr, sizeof revs[0], cmp_str);
        d->leaves = malloc(total);
        d->leaves[0] = 0;
        for (int k = 0; k < nr; k++) { if (k) strcat(d->leaves, " "); strcat(d->leaves, revs[k]); free(revs[k]); }
        d->nleaves = nr;
        p = end;
    }
    cbl_free(json);
    qsort(s->d, (size_t)s->n, sizeof *s->d, cmp_dstate);
    if (cbl_collection_all_docs(c, "{\"all_docs_mode\":\"include_deleted\"}", &json, &e) != CBL_OK) {
        rel_failf("%s: all_docs: %d %s", label, e.code, e.message);
        return 0;
    }
    p = json;
    int ok = 1;
    while ((p = strstr(p, "{\"id\":\"")) != NULL) {
        dstate key;
        copy_quoted(p + 7, key.id, sizeof key.id);
        const char* rv = strstr(p, "\"rev\":\"");
        const char* close = rv ? strchr(rv, '}') : NULL;
        if (!close) { rel_failf("%s: unparsable all_docs near %.80s", label, p); ok = 0; break; }
        dstate* d = bsearch(&key, s->d, (size_t)s->n, sizeof *s->d, cmp_dstate);
        if (!d) { rel_failf("%s: %s is in all_docs but not in the changes feed", label, key.id); ok = 0; }
        else {
            copy_quoted(rv + 7, d->cur, sizeof d->cur);
            const char* del = strstr(rv, "\"deleted\":true");
            d->deleted = del && del < close;
            d->has_cur = 1;
        }
        p = close;
    }
    cbl_free(json);
    for (int i = 0; i < s->n; i++) {
        if (!s->d[i].has_cur) { rel_failf("%s: %s is in the changes feed but not in all_docs", label, s->d[i].id); ok = 0; }
        else if (!strstr(s->d[i].leaves, s->d[i].cur)) {
            rel_failf("%s: %s: current revision %s is not one of its leaves %s", label, s->d[i].id, s->d[i].cur, s->d[i].leaves);
            ok = 0;
        }
    }
    return ok;
}

/* Documents of x and y must match exactly: same IDs, leaves, current revision, deletion. */
static int compare_states(const dbstate* x, const char* lx, const dbstate* y, const char* ly, const char* ctx) {
    int i = 0, j = 0, bad = 0;
    while (i < x->n || j < y->n) {
        int c = i >= x->n ? 1 : j >= y->n ? -1 : strcmp(x->d[i].id, y->d[j].id);
        char what[1024] = "";
        if (c < 0) { snprintf(what, sizeof what, "%s is in %s (leaves %s) but not in %s", x->d[i].id, lx, x->d[i].leaves, ly); i++; }
        else if (c > 0) { snprintf(what, sizeof what, "%s is in %s (leaves %s) but not in %s", y->d[j].id, ly, y->d[j].leaves, lx); j++; }
        else {
            const dstate *a = &x->d[i++], *b = &y->d[j++];
            if (strcmp(a->leaves, b->leaves))
                snprintf(what, sizeof what, "%s: leaves differ: %s has [%s], %s has [%s]", a->id, lx, a->leaves, ly, b->leaves);
            else if (strcmp(a->cur, b->cur) || a->deleted != b->deleted)
                snprintf(what, sizeof what, "%s: current differs: %s %s%s, %s %s%s", a->id, lx, a->cur,
                         a->deleted ? " (deleted)" : "", ly, b->cur, b->deleted ? " (deleted)" : "");
        }
        if (what[0]) {
            if (bad < 8) fprintf(stderr, "  %s: %s\n", ctx, what);
            bad++;
        }
    }
    if (bad) rel_failf("%s: %s and %s differ in %d document(s)", ctx, lx, ly, bad);
    else g_pass++;
    return bad;
}

typedef struct { cbl_db* db; cbl_collection* c; } opened;

static int open_db(int which, opened* o) {
    cbl_error e;
    o->db = NULL; o->c = NULL;
    if (cbl_db_open(DBN[which], g_dbdir[which], OPEN_OPTS, &o->db, &e) != CBL_OK ||
        cbl_db_default_collection(o->db, &o->c, &e) != CBL_OK) {
        rel_failf("open %s: %d %s", DBLABEL[which], e.code, e.message);
        if (o->db) IGNORE_STATUS(cbl_db_close(o->db, NULL));
        o->db = NULL;
        return 0;
    }
    return 1;
}
static void close_db(opened* o, int which) {
    cbl_error e;
    cbl_collection_release(o->c);
    if (o->db && cbl_db_close(o->db, &e) != CBL_OK) rel_failf("close %s: %d %s", DBLABEL[which], e.code, e.message);
    o->db = NULL; o->c = NULL;
}

static void integrity(opened* o, int which, const char* ctx) {
    char* report = NULL;
    cbl_error e;
    cbl_status st = cbl_db_integrity_check(o->db, &report, &e);
    if (st != CBL_OK) rel_failf("%s: cbl_db_integrity_check(%s) -> %d: %s %s", ctx, DBLABEL[which], st, e.message, report ? report : "");
    else g_pass++;
    cbl_free(report);
}

/* Every attachment of every document that ever had one is readable in full (present, its
 * digest verified by the library). Returns the bytes checked. */
static long long attachments_readable(opened* o, int which, const char* ctx) {
    long long bytes = 0;
    for (int i = 0; i < g_ndocs; i++) {
        if (!g_att_used[i]) continue;
        char id[32], *json = NULL;
        doc_id(id, sizeof id, i);
        cbl_status st = cbl_doc_attachment_names(o->c, id, &json, NULL);
        if (st != CBL_OK) { if (st != CBL_NOT_FOUND) rel_failf("%s: %s: attachment_names(%s) -> %d", ctx, DBLABEL[which], id, st); continue; }
        static char names[16][80];
        int k = rel_json_str_array(json, names, 16);
        cbl_free(json);
        for (int a = 0; a < k; a++) {
            void* data = NULL;
            size_t len = 0;
            cbl_error e;
            st = cbl_doc_get_attachment(o->c, id, names[a], &data, &len, &e);
            if (st != CBL_OK) rel_failf("%s: %s: %s/%s unreadable: %d %s", ctx, DBLABEL[which], id, names[a], st, e.message);
            else { bytes += (long long)len; g_pass++; }
            cbl_free(data);
        }
    }
    return bytes;
}

/* ======================================================================================= */
/* Driver: rounds                                                                            */
/* ======================================================================================= */

enum { PLAN_REPL, PLAN_BOTH, PLAN_SERVER, PLAN_SERVER_RESTART, PLAN_COUNT };
static const char* const PLAN_NAME[PLAN_COUNT] = { "kill replicator", "kill both", "kill server",
                                                   "kill server + restart" };
static long long g_plan_rounds[PLAN_COUNT], g_plan_mid[PLAN_COUNT];
static long long g_kill_starting, g_kill_busy;
static long long g_rounds_push, g_rounds_pull, g_done_before_kill, g_repl_failed_ok, g_repl_ok_checked;
static long long g_att_bytes_checked, g_restart_resumed, g_again_ok;

static void run_round(int round, rel_rng* r, long max_delay_ms) {
    int push = round == 1 || rel_below(r, 2) == 0;
    int local = push ? DB_A : DB_C;
    int plan = (int)rel_below(r, 100);
    plan = plan < 30 ? PLAN_REPL : plan < 50 ? PLAN_BOTH : plan < 72 ? PLAN_SERVER : PLAN_SERVER_RESTART;
    /* The kill moment: a delay after the replicator starts, or once it has handled a given
     * number of changes (so kills land inside batches, not only at the start or the end). */
    int by_progress = rel_below(r, 2) == 0;
    long delay_ms = (long)rel_below(r, (uint32_t)max_delay_ms + 1);
    if (rel_below(r, 8) == 0) delay_ms = (long)rel_below(r, 25);        /* during start-up / connect */
    long long target = 1 + rel_below(r, (uint32_t)(g_batch * 4));
    long jitter_ms = (long)rel_below(r, 16);     /* after the progress report: into the next request */
    long restart_ms = (long)rel_below(r, 300);
    int again = rel_below(r, 2) == 0;        /* kill replicator: a new one against the same server */
    int dir_mode = rel_below(r, 2) == 0;     /* the first server of the round serves B by directory */
    g_plan_rounds[plan]++;
    if (push) g_rounds_push++; else g_rounds_pull++;
    char ctx[128];
    snprintf(ctx, sizeof ctx, "round %d (%s, %s)", round, push ? "push A->B" : "pull C<-B", PLAN_NAME[plan]);

    child srv, rep;
    int port = 0;
    if (!start_server(&srv, 0, &port, dir_mode)) {
        rel_failf("%s: the server did not start (see %s/server.log)", ctx, g_dir);
        print_log_tail("server", &srv);
        child_kill(&srv); child_wait(&srv, 10); child_free(&srv);
        return;
    }
    start_replicator(&rep, local, port, push, plan == PLAN_SERVER ? 1 : 8);
    double t0 = rel_now(), reached = 0;
    for (;;) {
        child_pump(&rep, 1);
        if (rep.exited) break;
        if (by_progress) {
            if (!reached && rep.completed >= target) reached = rel_now();
            if (reached && rel_now() - reached >= jitter_ms / 1000.0) break;
        } else if (rel_now() - t0 >= delay_ms / 1000.0) break;
        if (rel_now() - t0 > 120) { rel_failf("%s: kill moment never came (no progress for 120 s)", ctx); break; }
    }
    int rep_alive = !rep.exited;
    int busy_at_kill = rep_alive && rep.busy;
    long long completed_at_kill = rep.completed;
    if (!rep_alive) g_done_before_kill++;
    else { g_plan_mid[plan]++; if (busy_at_kill) g_kill_busy++; else g_kill_starting++; }
    if (plan == PLAN_REPL || plan == PLAN_BOTH) child_kill(&rep);
    if (plan != PLAN_REPL) child_kill(&srv);

    int expect_success = 0;          /* the replicator must end successfully */
    if (plan == PLAN_SERVER_RESTART) {
        child_wait(&srv, 10);
        child_free(&srv);
        rel_sleep_us(restart_ms * 1000);
        int port2 = 0;
        if (!start_server(&srv, port, &port2, 1) || port2 != port) {
            /* The port may have been taken by someone else meanwhile: not the library's fault,
             * but then the replicator cannot be expected to finish. */
            fprintf(stderr, "%s: note: the server could not be restarted on port %d (see %s/server.log)\n", ctx, port, g_dir);
            print_log_tail("server", &srv);
            child_kill(&srv);
        } else expect_success = 1;
    }
    if (!child_wait(&rep, 120)) {
        rel_failf("%s: the replicator did not end within 120 s after the kill", ctx);
        print_log_tail("replicator", &rep);
        child_kill(&rep);
        child_wait(&rep, 10);
    }
    int rc = exit_code(&rep);
    int rep_ok = rc == 0;
    if (rep.exited && !killed_by_sigkill(&rep)) {
        if (rc == 3 || rc == 4 || rc < 0) {
            rel_failf("%s: the replicator ended with status 0x%x (%s)", ctx, rep.status, rep.final);
            print_log_tail("replicator", &rep);
        } else if (rc == 2) {
            /* An error is expected only when its server was killed for good while it ran. */
            int may_fail = rep_alive && (plan == PLAN_SERVER || (plan == PLAN_SERVER_RESTART && !expect_success));
            if (may_fail) g_repl_failed_ok++;
            else {
                rel_failf("%s: the replication failed%s: %s", ctx,
                          plan == PLAN_SERVER_RESTART ? " although its server came back" : "", rep.final);
                print_log_tail("replicator", &rep);
            }
        } else g_pass++;
    }
    if (expect_success && rep_alive && rep_ok) g_restart_resumed++;
    if (plan == PLAN_REPL && again && !srv.exited) {
        /* The server outlived a client that vanished mid-request: a new replication
         * against it must go through (no lock or half-read request left behind). */
        child rep2;
        start_replicator(&rep2, local, port, push, 8);
        if (!child_wait(&rep2, 120)) {
            rel_failf("%s: a second replicator against the surviving server did not end within 120 s", ctx);
            print_log_tail("replicator", &rep2);
            child_kill(&rep2);
            child_wait(&rep2, 10);
        } else if (exit_code(&rep2) != 0) {
            rel_failf("%s: a second replicator against the surviving server failed (status 0x%x): %s", ctx, rep2.status, rep2.final);
            print_log_tail("replicator", &rep2);
        } else { g_pass++; g_again_ok++; rep_ok = 1; }
        child_free(&rep2);
    }
    if (plan == PLAN_REPL || plan == PLAN_SERVER_RESTART) stop_server(&srv, round);
    else child_wait(&srv, 10);
    if (!srv.exited) { rel_failf("%s: the server did not end", ctx); child_kill(&srv); child_wait(&srv, 10); }
    if (g_verbose)
        printf("%s: kill %s %lld %s: replicator %s (%lld changes handled), ended after %.0f ms, exit %s%d, final %s\n",
               ctx, by_progress ? "at" : "after", by_progress ? target : (long long)delay_ms, by_progress ? "changes" : "ms",
               rep_alive ? (busy_at_kill ? "busy" : "starting") : "done", completed_at_kill, (rep.t_exit - rep.t_start) * 1000,
               killed_by_sigkill(&rep) ? "SIGKILL " : "", rc, rep.final[0] ? rep.final : "-");
    child_free(&rep);
    child_free(&srv);

    /* Both databases of the round: sound, attachments whole, nothing invented; after a
     * successful run the target holds exactly the source's documents. */
    opened src, dst;
    int src_which = push ? DB_A : DB_B, dst_which = push ? DB_B : DB_C;
    if (!open_db(src_which, &src)) return;
    if (!open_db(dst_which, &dst)) { close_db(&src, src_which); return; }
    integrity(&src, src_which, ctx);
    integrity(&dst, dst_which, ctx);
    g_att_bytes_checked += attachments_readable(&dst, dst_which, ctx);
    dbstate ss, ds;
    if (load_state(src.c, &ss, DBLABEL[src_which]) && load_state(dst.c, &ds, DBLABEL[dst_which])) {
        if (rep_ok) { compare_states(&ss, DBLABEL[src_which], &ds, DBLABEL[dst_which], ctx); g_repl_ok_checked++; }
        else {
            /* Interrupted: the target's documents are a subset of the source's. */
            int bad = 0;
            for (int i = 0; i < ds.n; i++)
                if (!bsearch(&ds.d[i], ss.d, (size_t)ss.n, sizeof *ss.d, cmp_dstate)) {
                    if (bad++ < 5) fprintf(stderr, "  %s: %s has %s, which %s does not\n", ctx, DBLABEL[dst_which], ds.d[i].id, DBLABEL[src_which]);
                }
            if (bad) rel_failf("%s: %d document(s) in %s that %s never had", ctx, bad, DBLABEL[dst_which], DBLABEL[src_which]);
            else g_pass++;
        }
    }
    free_state(&ss);
    free_state(&ds);
    close_db(&src, src_which);
    close_db(&dst, dst_which);
}

static void compact_one(rel_rng* r) {
    int which = (int)rel_below(r, 3);
    opened o;
    if (!open_db(which, &o)) return;
    cbl_error e;
    if (cbl_db_compact(o.db, &e) != CBL_OK) rel_failf("compact %s: %d %s", DBLABEL[which], e.code, e.message);
    else g_ops[OP_COMPACT]++;
    close_db(&o, which);
}

/* ======================================================================================= */
/* Driver: final convergence                                                                 */
/* ======================================================================================= */

static void final_check(void) {
    opened o[3];
    for (int k = 0; k < 3; k++)
        if (!open_db(k, &o[k])) { for (int j = 0; j < k; j++) close_db(&o[j], j); return; }
    dbstate s[3];
    int loaded = 1;
    for (int k = 0; k < 3; k++) loaded &= load_state(o[k].c, &s[k], DBLABEL[k]);
    if (loaded) {
        compare_states(&s[DB_A], "A", &s[DB_B], "B", "final");
        compare_states(&s[DB_A], "A", &s[DB_C], "C", "final");
    }
    uint64_t count[3] = { 0, 0, 0 };
    for (int k = 0; k < 3; k++) {
        cbl_error e;
        if (cbl_db_count(o[k].db, &count[k], &e) != CBL_OK) rel_failf("final: count %s: %d", DBLABEL[k], e.code);
        integrity(&o[k], k, "final");
    }
    if (count[0] != count[1] || count[0] != count[2])
        rel_failf("final: cbl_db_count differs: A %llu, B %llu, C %llu", (unsigned long long)count[0],
                  (unsigned long long)count[1], (unsigned long long)count[2]);
    else g_pass++;

    /* Every leaf's body (JSON, attachment stubs with digests and revpos) is the same. */
    int bodies_bad = 0, leaves = 0, conflicted = 0, deleted = 0;
    for (int i = 0; loaded && i < s[DB_A].n; i++) {
        const char* id = s[DB_A].d[i].id;
        leaves += s[DB_A].d[i].nleaves;
        if (s[DB_A].d[i].nleaves > 1) conflicted++;
        if (s[DB_A].d[i].deleted) deleted++;
        char* j[3] = { NULL, NULL, NULL };
        for (int k = 0; k < 3; k++) {
            cbl_error e;
            if (cbl_doc_open_revs(o[k].c, id, NULL, NULL, &j[k], &e) != CBL_OK)
                rel_failf("final: open_revs(%s) in %s: %d %s", id, DBLABEL[k], e.code, e.message);
        }
        for (int k = 1; k < 3; k++) {
            if (j[0] && j[k] && strcmp(j[0], j[k]) != 0) {
                if (bodies_bad++ < 5) fprintf(stderr, "  final: %s: leaves differ:\n    A: %.600s\n    %s: %.600s\n", id, j[0], DBLABEL[k], j[k]);
            }
        }
        for (int k = 0; k < 3; k++) cbl_free(j[k]);
    }
    if (bodies_bad) rel_failf("final: %d leaf revision bodies differ", bodies_bad);
    else if (loaded) g_pass++;

    /* Attachment bytes: C's (and B's) equal A's. */
    long long att_bytes = 0;
    int att_docs = 0;
    for (int i = 0; i < g_ndocs; i++) {
        if (!g_att_used[i]) continue;
        char id[32], *json = NULL;
        doc_id(id, sizeof id, i);
        if (cbl_doc_attachment_names(o[DB_A].c, id, &json, NULL) != CBL_OK) continue;
        static char names[16][80];
        int n = rel_json_str_array(json, names, 16);
        cbl_free(json);
        if (n) att_docs++;
        for (int a = 0; a < n; a++) {
            void* data[3] = { NULL, NULL, NULL };
            size_t len[3] = { 0, 0, 0 };
            int ok = 1;
            for (int k = 0; k < 3; k++) {
                cbl_error e;
                if (cbl_doc_get_attachment(o[k].c, id, names[a], &data[k], &len[k], &e) != CBL_OK) {
                    rel_failf("final: %s: %s/%s: %d %s", DBLABEL[k], id, names[a], e.code, e.message);
                    ok = 0;
                }
            }
            if (ok) {
                if (len[1] != len[0] || len[2] != len[0] || memcmp(data[0], data[1], len[0]) || memcmp(data[0], data[2], len[0]))
                    rel_failf("final: %s/%s: content differs (lengths A %zu, B %zu, C %zu)", id, names[a], len[0], len[1], len[2]);
                else { g_pass++; att_bytes += (long long)len[0]; }
            }
            for (int k = 0; k < 3; k++) cbl_free(data[k]);
        }
    }
    printf("replication_crash_test: final: %d documents (%llu live, %d deleted, %d conflicted), %d leaf revisions, "
           "%d documents with attachments (%lld bytes compared)\n", loaded ? s[DB_A].n : -1,
           (unsigned long long)count[0], deleted, conflicted, leaves, att_docs, att_bytes);
    for (int k = 0; k < 3; k++) { free_state(&s[k]); close_db(&o[k], k); }
}

int main(int argc, char** argv) {
    if (argc == 6 && !strcmp(argv[1], "--serve")) return serve_main(argv[2], argv[3], atoi(argv[4]), argv[5]);
    if (argc == 8 && !strcmp(argv[1], "--replicate"))
        return replicate_main(argv[2], argv[3], argv[4], argv[5], atoi(argv[6]), atoi(argv[7]));

    int kills = 20, ndocs = 1500, watchdog = 600;
    long max_delay_ms = 150;
    uint64_t seed = 1;
    const char* dir_arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--kills") && i + 1 < argc) kills = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--docs") && i + 1 < argc) ndocs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) g_batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-delay-ms") && i + 1 < argc) max_delay_ms = atol(argv[++i]);
        else if (!strcmp(argv[i], "--watchdog") && i + 1 < argc) watchdog = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir_arg = argv[++i];
        else if (!strcmp(argv[i], "--verbose")) g_verbose = 1;
        else {
            fprintf(stderr, "usage: %s [--kills N] [--seed S] [--docs D] [--batch B] [--max-delay-ms M] "
                    "[--watchdog SECONDS] [--dir DIR] [--verbose]\n", argv[0]);
            return 2;
        }
    }
    if (ndocs < 10) ndocs = 10;
    if (g_batch < 1) g_batch = 50;
    if (max_delay_ms < 0) max_delay_ms = 0;
    ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    if (n <= 0) { perror("readlink"); return 2; }
    g_self[n] = 0;
    if (dir_arg) {
        snprintf(g_dir, sizeof g_dir, "%s", dir_arg);
        mkdir(g_dir, 0755);
    } else rel_mktemp(g_dir, sizeof g_dir, "replcrash");
    for (int k = 0; k < 3; k++) snprintf(g_dbdir[k], sizeof g_dbdir[k], k == DB_B ? "%s/served" : "%s", g_dir);
    mkdir(g_dbdir[DB_B], 0755);
    for (int k = 0; k < 3; k++) IGNORE_STATUS(cbl_db_delete_named(DBN[k], g_dbdir[k], NULL));
    printf("replication_crash_test: seed %llu, %d kill rounds, %d docs, batch %d, max delay %ld ms, dir %s\n",
           (unsigned long long)seed, kills, ndocs, g_batch, max_delay_ms, g_dir);
    fflush(stdout);
    signal(SIGPIPE, SIG_IGN);
    snprintf(g_watchdog_msg, sizeof g_watchdog_msg, "FAILED: watchdog: the run took longer than %d s (a replication "
             "or a server that never ends?); databases kept in %s\n", watchdog, g_dir);
    signal(SIGALRM, on_alarm);
    alarm((unsigned)watchdog);

    rel_rng r = { seed };
    double t0 = rel_now();
    fill_a(&r, ndocs);
    for (int k = 1; k < 3; k++) { opened o; if (open_db(k, &o)) close_db(&o, k); }   /* empty B and C */
    double t_fill = rel_now() - t0;

    int round;
    for (round = 1; round <= kills && g_fail < 20; round++) {
        run_round(round, &r, max_delay_ms);
        /* More work for the next rounds; now and then a burst, now and then a compaction. */
        int changes = 20 + (int)rel_below(&r, 120);
        if (rel_below(&r, 4) == 0) changes += 200 + (int)rel_below(&r, 400);
        mutate_a(&r, changes);
        if (rel_below(&r, 8) == 0) compact_one(&r);
    }
    double t_rounds = rel_now() - t0 - t_fill;

    /* Converge without kills, then compare everything. */
    char final[1024];
    int ok_push = run_replication(DB_A, 1, "final push A->B", final, sizeof final);
    if (g_verbose) printf("final push: %s\n", final);
    long long final_pushed = rel_json_int(final, "documents_pushed", -1), final_total = rel_json_int(final, "total", -1);
    int ok_pull = run_replication(DB_C, 0, "final pull C<-B", final, sizeof final);
    if (g_verbose) printf("final pull: %s\n", final);
    long long final_pulled = rel_json_int(final, "documents_pulled", -1);
    if (ok_push && ok_pull) final_check();

    /* Nothing left to do: the checkpoints of both directions are at the end. */
    if (run_replication(DB_A, 1, "extra push A->B", final, sizeof final)) {
        if (rel_json_int(final, "documents_pushed", -1) != 0 || rel_json_int(final, "total", -1) != 0)
            rel_failf("extra push after convergence was not empty: %s", final);
        else g_pass++;
    }
    if (run_replication(DB_C, 0, "extra pull C<-B", final, sizeof final)) {
        if (rel_json_int(final, "documents_pulled", -1) != 0 || rel_json_int(final, "total", -1) != 0)
            rel_failf("extra pull after convergence was not empty: %s", final);
        else g_pass++;
    }
    alarm(0);

    double secs = rel_now() - t0;
    long long mid = 0;
    for (int p = 0; p < PLAN_COUNT; p++) mid += g_plan_mid[p];
    printf("replication_crash_test: %d rounds (%lld push, %lld pull): ", round - 1, g_rounds_push, g_rounds_pull);
    for (int p = 0; p < PLAN_COUNT; p++)
        printf("%s %lld (%lld while it ran)%s", PLAN_NAME[p], g_plan_rounds[p], g_plan_mid[p], p + 1 < PLAN_COUNT ? ", " : "; ");
    printf("the replicator was running at %lld kills (%lld of them mid-sync, %lld while starting), "
           "%lld replications had finished first; "
           "%lld failed as expected after their server died, %lld resumed after a server restart, "
           "%lld second replications against a server that outlived its killed client; "
           "%lld completed rounds compared exactly; %lld attachment bytes read back\n",
           mid, g_kill_busy, g_kill_starting, g_done_before_kill, g_repl_failed_ok, g_restart_resumed, g_again_ok,
           g_repl_ok_checked, g_att_bytes_checked);
    printf("replication_crash_test: A: %d documents, %lld created, %lld updates, %lld resurrections, %lld deletions, "
           "%lld conflict branches (+%lld deleted), %lld losers updated, %lld losers deleted, %lld attachments set, "
           "%lld removed, %lld compactions; final push %lld of %lld changes, final pull %lld\n",
           g_ndocs, g_ops[OP_NEW], g_ops[OP_UPDATE], g_ops[OP_RESURRECT], g_ops[OP_DELETE], g_ops[OP_BRANCH],
           g_ops[OP_BRANCH_DEL], g_ops[OP_UPD_LOSER], g_ops[OP_DEL_LOSER], g_ops[OP_ATT_SET], g_ops[OP_ATT_DEL],
           g_ops[OP_COMPACT], final_pushed, final_total, final_pulled);
    printf("replication_crash_test: fill %.1f s, rounds %.1f s, total %.1f s\n", t_fill, t_rounds, secs);
    free(g_att_used);
    free(g_blob);
    if (!dir_arg && g_fail == 0) rel_rm_rf(g_dir);
    else printf("replication_crash_test: databases kept in %s\n", g_dir);
    return rel_summary();
}
