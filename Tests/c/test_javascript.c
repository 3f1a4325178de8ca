/*
 * test_javascript.c — C tests of design documents' JavaScript through libcblite.so: the
 * engine's limits (section 13 of include/cblite.h).
 * Prints "N passed, N failed" and exits nonzero on any failure.
 *
 *   cc -std=c99 -Wall -Wextra -Werror -g -Iinclude -o test_javascript Tests/c/test_javascript.c \
 *      -Lbuild/lib -lcblite -lpthread
 */
#define _POSIX_C_SOURCE 200809L

#include "cblite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static void test_limits(void) {
    uint32_t timeout = 0;
    uint64_t memory = 0;
    CHECK_ST(cbl_js_get_limits(&timeout, &memory, &E), CBL_OK);
    CHECK(timeout == 5000 && memory == (uint64_t)64 << 20);
    CHECK_ST(cbl_js_set_limits(250, (uint64_t)8 << 20, &E), CBL_OK);
    CHECK_ST(cbl_js_get_limits(&timeout, &memory, &E), CBL_OK);
    CHECK(timeout == 250 && memory == (uint64_t)8 << 20);
    CHECK_ST(cbl_js_set_limits(0, 1 << 20, &E), CBL_OK);          /* no time limit, the least memory */
    CHECK_ST(cbl_js_set_limits(100, (1 << 20) - 1, &E), 400);
    CHECK(strstr(E.message, "memory_bytes") != NULL);
    CHECK_ST(cbl_js_get_limits(&timeout, &memory, &E), CBL_OK);
    CHECK(timeout == 0 && memory == 1 << 20);                      /* the refused call changed nothing */
    CHECK_ST(cbl_js_get_limits(NULL, &memory, &E), 400);
    CHECK_ST(cbl_js_get_limits(&timeout, NULL, NULL), 400);
    CHECK_ST(cbl_js_set_limits(5000, (uint64_t)64 << 20, NULL), CBL_OK);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    snprintf(g_root, sizeof g_root, "/tmp/cblite-js-XXXXXX");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 2; }
    int64_t instances = cbl_instance_count();
    test_limits();
    return finish_tests(instances);
}
