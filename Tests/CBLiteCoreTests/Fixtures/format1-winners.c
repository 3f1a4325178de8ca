/* Writes Fixtures/format1-winners.cblite2 (FormatUpgradeTests): built against the
 * libcblite of commit a77b083, whose winner rule compared revision IDs as ASCII:
 *   cc -I include format1-winners.c -o mk -L<old lib> -lcblite && ./mk <dir>
 */
#include "cblite.h"
#include <stdio.h>
#include <stdlib.h>
static void put(cbl_collection* c, const char* id, const char* body, const char* hist) {
    cbl_error e = {0};
    if (cbl_doc_put_existing(c, id, body, hist, &e) != 0) { fprintf(stderr, "put %s: %s\n", id, e.message); exit(1); }
}
int main(int argc, char** argv) {
    cbl_db* db; cbl_collection* c; cbl_collection* n; cbl_error e = {0};
    if (cbl_db_open("format1", argv[1], "{\"create\":true}", &db, &e)) { fprintf(stderr, "%s\n", e.message); return 1; }
    if (cbl_db_default_collection(db, &c, &e)) return 2;
    /* A conflict between CouchDB's 32-hex leaf and our 40-hex one: the old rule (ASCII) picks ours. */
    put(c, "mixed", "{\"side\":\"root\"}", "[\"1-aaaa\"]");
    put(c, "mixed", "{\"side\":\"ours\"}", "[\"2-748efd35aa5e1b2c3d4e5f60718293a4b5c6d7e8\",\"1-aaaa\"]");
    put(c, "mixed", "{\"side\":\"couchdb\"}", "[\"2-4dc79c95e1a2b3c4d5e6f708192a3b4c\",\"1-aaaa\"]");
    /* Both leaves deleted: the winner among tombstones changes too. */
    put(c, "tombstones", "{\"side\":\"root\"}", "[\"1-bbbb\"]");
    put(c, "tombstones", "{\"_deleted\":true}", "[\"2-748efd35aa5e1b2c3d4e5f60718293a4b5c6d7e8\",\"1-bbbb\"]");
    put(c, "tombstones", "{\"_deleted\":true}", "[\"2-4dc79c95e1a2b3c4d5e6f708192a3b4c\",\"1-bbbb\"]");
    /* Unchanged by the rule: two of our IDs, and one revision. */
    put(c, "ours-only", "{\"side\":\"low\"}", "[\"2-1111111111111111111111111111111111111111\",\"1-cccc\"]");
    put(c, "ours-only", "{\"side\":\"high\"}", "[\"2-9999999999999999999999999999999999999999\",\"1-cccc\"]");
    put(c, "single", "{\"side\":\"only\"}", "[\"1-dddd\"]");
    if (cbl_db_create_collection(db, "s", "named", &n, &e)) { fprintf(stderr, "%s\n", e.message); return 3; }
    put(n, "mixed", "{\"side\":\"root\"}", "[\"1-aaaa\"]");
    put(n, "mixed", "{\"side\":\"ours\"}", "[\"2-748efd35aa5e1b2c3d4e5f60718293a4b5c6d7e8\",\"1-aaaa\"]");
    put(n, "mixed", "{\"side\":\"couchdb\"}", "[\"2-4dc79c95e1a2b3c4d5e6f708192a3b4c\",\"1-aaaa\"]");
    cbl_collection_release(n);
    cbl_collection_release(c);
    if (cbl_db_close(db, &e)) return 4;
    return 0;
}
