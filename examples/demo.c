/*
 * demo.c — a short tour of libcblite: documents, revisions, a conflict and its
 * resolution, deletion, the changes feed and a change listener.
 *
 *   make demo        (runs: build/demo/demo build/demo/data)
 */
#define _POSIX_C_SOURCE 200809L

#include "cblite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static cbl_error err;

/* Stops the tour with a readable message when a call fails. */
static void must(cbl_status status, const char* what) {
    if (status == CBL_OK) return;
    fprintf(stderr, "demo: %s failed: %d (%s) %s\n", what, (int)status, cbl_status_name(status), err.message);
    exit(1);
}

/* Prints every change the database reports, as the listener sees it. */
static void on_change(void* context, const cbl_change* changes, size_t count) {
    (void)context;
    for (size_t i = 0; i < count; i++)
        printf("   (listener: \"%s\" is now at revision %s%s%s)\n", changes[i].doc_id,
               changes[i].rev_id[0] ? changes[i].rev_id : "-",
               changes[i].deleted ? ", deleted" : "",
               changes[i].external ? ", from another peer" : "");
}

/* Prints one line per entry of a changes feed (a tiny scan of its JSON, enough here). */
static void print_feed(const char* feed) {
    for (const char* p = strstr(feed, "{\"seq\":"); p; p = strstr(p + 1, "{\"seq\":")) {
        const char* next = strstr(p + 1, "{\"seq\":");
        const char* id = strstr(p, "\"id\":\"");
        const char* rev = strstr(p, "\"rev\":\"");
        const char* del = strstr(p, "\"deleted\":true");
        if (!id || !rev) break;
        id += 6;
        rev += 7;
        printf("   - sequence %ld: \"%.*s\" at %.*s%s\n", strtol(p + 7, NULL, 10), (int)strcspn(id, "\""), id,
               (int)strcspn(rev, "\""), rev, del && (!next || del < next) ? " (deleted)" : "");
    }
}

/* Prints the document's current revision and body. */
static void show(cbl_collection* coll, const char* id, uint32_t flags) {
    char* json = NULL;
    must(cbl_doc_get(coll, id, flags, &json, &err), "cbl_doc_get");
    printf("   %s\n", json);
    cbl_free(json);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIRECTORY\n", argv[0]);
        return 2;
    }
    const char* dir = argv[1];
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        perror(dir);
        return 1;
    }

    printf("libcblite %s\n\n", cbl_version());

    /* 1. A database is a folder holding one SQLite file. */
    cbl_db* db = NULL;
    cbl_collection* recipes = NULL;
    char* path = NULL;
    must(cbl_db_open("cookbook", dir, NULL, &db, &err), "cbl_db_open");
    must(cbl_db_path(db, &path, &err), "cbl_db_path");
    printf("1. Created the database \"cookbook\" in %s.\n", path);
    cbl_free(path);
    must(cbl_db_default_collection(db, &recipes, &err), "cbl_db_default_collection");

    /* 2. Listeners hear about every committed change. */
    cbl_listener_token* token = NULL;
    must(cbl_collection_add_change_listener(recipes, on_change, NULL, &token, &err), "add listener");
    printf("2. Registered a listener; it will print each change below.\n");

    /* 3. Save a new document: its first revision is "1-<digest>". */
    char *rev1 = NULL, *rev2 = NULL;
    printf("3. Saving a new document \"pancakes\".\n");
    must(cbl_doc_put(recipes, "pancakes", "{\"title\":\"Pancakes\",\"servings\":2}", NULL, 0, NULL,
                     &rev1, &err), "cbl_doc_put");
    printf("   Its first revision is %s.\n", rev1);

    /* 4. Update it: a new revision whose parent is the one we read. */
    printf("4. Doubling the servings, on top of revision 1.\n");
    must(cbl_doc_put(recipes, "pancakes", "{\"title\":\"Pancakes\",\"servings\":4}", rev1, 0, NULL,
                     &rev2, &err), "cbl_doc_put (update)");
    printf("   The document moved to revision %s:\n", rev2);
    show(recipes, "pancakes", 0);
    cbl_status stale = cbl_doc_put(recipes, "pancakes", "{\"servings\":1}", rev1, 0, NULL, NULL, &err);
    printf("   Saving again on the old revision is refused: %d (%s).\n", (int)stale, cbl_status_name(stale));

    /* 5. Two peers edited revision 2 independently; their revisions arrive with their
     *    history (as the replicator would insert them). The tree now has two leaves. */
    char alice[160], bob[160], history[400];
    snprintf(alice, sizeof alice, "3-a11ce0");
    snprintf(bob, sizeof bob, "3-b0b000");
    printf("5. Alice (%s) and Bob (%s) both changed revision 2 on their devices; their\n"
           "   revisions arrive with their history, as replication would insert them.\n", alice, bob);
    snprintf(history, sizeof history, "[\"%s\",\"%s\",\"%s\"]", alice, rev2, rev1);
    must(cbl_doc_put_existing(recipes, "pancakes", "{\"title\":\"Pancakes\",\"servings\":4,\"syrup\":\"maple\"}",
                              history, &err), "cbl_doc_put_existing (alice)");
    snprintf(history, sizeof history, "[\"%s\",\"%s\",\"%s\"]", bob, rev2, rev1);
    must(cbl_doc_put_existing(recipes, "pancakes", "{\"title\":\"Pancakes\",\"servings\":6}",
                              history, &err), "cbl_doc_put_existing (bob)");
    printf("   The revision tree now has two leaves: a conflict.\n");

    /* 6. Every peer picks the same winner: highest generation, then the revision ID that
     *    sorts higher in ASCII. The losers are listed in _conflicts. */
    char* leaves = NULL;
    must(cbl_doc_conflicts(recipes, "pancakes", &leaves, &err), "cbl_doc_conflicts");
    printf("6. The leaf revisions, winner first: %s. The document reads as:\n", leaves);
    cbl_free(leaves);
    show(recipes, "pancakes", CBL_GET_CONFLICTS);

    /* 7. Resolve: delete the losing leaf (any undeleted leaf may be named). Bob's revision
     *    stays the current one and the conflict is gone. */
    printf("7. Resolving the conflict by deleting Alice's losing revision.\n");
    char* resolved = NULL;
    must(cbl_doc_delete(recipes, "pancakes", alice, &resolved, &err), "cbl_doc_delete (losing branch)");
    printf("   Her branch now ends with the tombstone %s.\n", resolved);
    cbl_free(resolved);
    must(cbl_doc_conflicts(recipes, "pancakes", &leaves, &err), "cbl_doc_conflicts");
    printf("   The only live leaf is now %s; no conflict remains:\n", leaves);
    cbl_free(leaves);
    show(recipes, "pancakes", CBL_GET_CONFLICTS | CBL_GET_REVISIONS);

    /* 8. Delete a whole document: its current revision becomes a tombstone. */
    printf("8. Saving a document \"waffles\", then deleting it.\n");
    must(cbl_doc_put(recipes, "waffles", "{\"title\":\"Waffles\"}", NULL, 0, NULL, NULL, &err), "cbl_doc_put");
    char* tomb = NULL;
    must(cbl_doc_delete(recipes, "waffles", NULL, &tomb, &err), "cbl_doc_delete");
    cbl_status st = cbl_doc_get(recipes, "waffles", 0, &leaves, &err);
    printf("   Its tombstone is %s; reading it now says %d (%s).\n", tomb, (int)st, cbl_status_name(st));
    cbl_free(tomb);

    /* 9. The changes feed lists each document once, at its latest sequence. */
    char* feed = NULL;
    uint64_t count = 0;
    must(cbl_db_count(db, &count, &err), "cbl_db_count");
    must(cbl_collection_changes(recipes, 0, "{\"include_docs\":true}", &feed, &err), "cbl_collection_changes");
    printf("9. The database holds %llu live document(s). The changes feed lists:\n", (unsigned long long)count);
    print_feed(feed);
    cbl_free(feed);

    must(cbl_db_wait_notifications(db, 5000, &err), "cbl_db_wait_notifications");
    cbl_listener_token_remove(token);
    cbl_collection_release(recipes);
    cbl_free(rev1);
    cbl_free(rev2);
    must(cbl_db_close(db, &err), "cbl_db_close");
    printf("\nClosed the database. Done.\n");
    return 0;
}
