/* SPDX-License-Identifier: MIT */
/*
 * The small pieces every part of idmint shares (src/common/common.h): the
 * one URL masking function (every backend's messages go through it: a
 * password must never reach a log), the backend-table lookup, opening a
 * file only if it is a regular one (a FIFO is refused, never waited on),
 * the fault hook's contract, and the monotonic clock helper.
 */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

/* ---- idm__url_mask ---- */

static void check_mask(const char *url, const char *want)
{
    char out[256];
    idm__url_mask(url, out, sizeof out);
    if (strcmp(out, want) != 0)
        fail_msg("idm__url_mask('%s') = '%s', want '%s'", url, out, want);
}

static void test_mask_authority(void **state)
{
    (void)state;
    check_mask("postgres://idmint:s3cret@db.example:5432/ids",
               "postgres://idmint:***@db.example:5432/ids");
    check_mask("postgresql://u:pw@h", "postgresql://u:***@h");
    check_mask("etcd://root:pw@10.0.0.1:2379,10.0.0.2:2379/idmint",
               "etcd://root:***@10.0.0.1:2379,10.0.0.2:2379/idmint");
    /* A '?' may be part of a password: the authority runs to the first '/'. */
    check_mask("postgres://u:p?ss@h/db", "postgres://u:***@h/db");
    check_mask("postgres://u:p?ss@h?sslmode=disable", "postgres://u:***@h?sslmode=disable");
    /* An '@' in the password: everything up to the last '@' is hidden. */
    check_mask("postgres://u:p@ss@h/db", "postgres://u:***@h/db");
    /* A user without a password, and no credentials at all: as they are. */
    check_mask("postgres://idmint@h:5432/db", "postgres://idmint@h:5432/db");
    check_mask("postgres://h:5432/db", "postgres://h:5432/db");
    /* An '@' after the path is no credential: a port is not masked. */
    check_mask("postgres://h:5432/db?user=a@b", "postgres://h:5432/db?user=a@b");
}

static void test_mask_options(void **state)
{
    (void)state;
    check_mask("postgres://h/db?password=pw", "postgres://h/db?password=***");
    check_mask("postgres://h/db?sslmode=disable&password=pw&connect_timeout=2",
               "postgres://h/db?sslmode=disable&password=***&connect_timeout=2");
    check_mask("postgres://u:a@h/db?password=b", "postgres://u:***@h/db?password=***");
    /* libpq's key=value form. */
    check_mask("host=h password=pw dbname=ids", "host=h password=*** dbname=ids");
    check_mask("password=pw", "password=***");
    /* A word that merely ends in "password=" is not the option. */
    check_mask("postgres://h/db?xpassword=v", "postgres://h/db?xpassword=v");
    /* Paths come through as they are. */
    check_mask("sqlite:///var/lib/idmint/segments.db", "sqlite:///var/lib/idmint/segments.db");
    check_mask("file:///var/lib/idmint/leases", "file:///var/lib/idmint/leases");
}

static void test_mask_cut(void **state)
{
    (void)state;
    char out[16];
    memset(out, 'x', sizeof out);
    idm__url_mask("postgres://user:secret@host/db", out, sizeof out);
    /* Cut to the room there is, terminated, and no byte of the password. */
    assert_int_equal(strlen(out), sizeof out - 1);
    assert_null(strstr(out, "secret"));
    assert_null(strstr(out, "sec"));
    memset(out, 'x', sizeof out);
    idm__url_mask("postgres://u:pw@h", out, 1);
    assert_int_equal(out[0], '\0');
    idm__url_mask(NULL, out, sizeof out);
    assert_string_equal(out, "");
}

/* ---- idm__scheme ---- */

static const int be_a = 1, be_b = 2;
static const idm__scheme rows[] = {
    {"file", &be_a, NULL},
    {"etcd", NULL, "IDM_WITH_ETCD=OFF"},
    {"postgres", &be_b, NULL},
    {"postgresql", &be_b, NULL},
};
#define NROWS (sizeof rows / sizeof rows[0])

/* ---- idm__text_line ---- */

static void text_is(const char *msg, const char *url, const char *want)
{
    char out[256];
    idm__text_line(msg, url, out, sizeof out);
    if (strcmp(out, want) != 0)
        fail_msg("idm__text_line('%s', '%s') = '%s', want '%s'", msg, url ? url : "(null)", out,
                 want);
}

static void test_text_line(void **state)
{
    char small[8];
    (void)state;
    /* libpq's words: one line, white space runs as one space. */
    text_is("could not connect\n\tHINT:  try again\n", NULL, "could not connect HINT: try again");
    text_is("", NULL, "no message");
    text_is(" \n\t", NULL, "no message");
    /* A password in the authority, and in password= options, wherever the
     * message quotes it. */
    text_is("invalid percent-encoded token: \"s3cr%t\"", "postgres://u:s3cr%t@h/db",
            "invalid percent-encoded token: \"***\"");
    text_is("bad value \"pw2\" and pw2 again", "postgres://u@h/db?a=1&password=pw2",
            "bad value \"***\" and *** again");
    text_is("x pw3 y", "postgres://h/db?password=pw3 password=zz", "x *** y");
    text_is("the user u is fine", "postgres://u:zz@h/db", "the user u is fine");
    /* Only the authority before the first '/': a ':' later is no password. */
    text_is("a:b@c", "postgres://h/db?x=a:b@c", "a:b@c");
    /* Cut to the buffer, always terminated. */
    idm__text_line("0123456789", NULL, small, sizeof small);
    assert_string_equal(small, "0123456");
}

/* ---- idm__argv_hide_secrets ---- */

static void test_argv_hide(void **state)
{
    char a0[] = "idmint", a1[] = "lease", a2[] = "postgres://u:topsecret@h:5432/db",
         a3[] = "--store=postgres://h/db?password=pw&x=1", a4[] = "file:///tmp/x";
    char *argv[] = {a0, a1, a2, a3, a4, NULL};
    (void)state;
    idm__argv_hide_secrets(5, argv);
    /* The program reads the originals from copies... */
    assert_string_equal(argv[2], "postgres://u:topsecret@h:5432/db");
    assert_string_equal(argv[3], "--store=postgres://h/db?password=pw&x=1");
    assert_ptr_not_equal(argv[2], a2);
    /* ... while the bytes ps shows are masked, padded to their length. */
    assert_string_equal(a2, "postgres://u:***@h:5432/db******");
    assert_int_equal(strlen(a2), strlen("postgres://u:topsecret@h:5432/db"));
    assert_null(strstr(a3, "pw&"));
    assert_non_null(strstr(a3, "password=***"));
    /* Arguments without credentials are left where they are. */
    assert_ptr_equal(argv[4], a4);
    assert_ptr_equal(argv[1], a1);
    free(argv[2]);
    free(argv[3]);
}

static void test_scheme_find(void **state)
{
    (void)state;
    const idm__scheme *r = idm__scheme_find(rows, NROWS, "file:///tmp/x");
    assert_non_null(r);
    assert_ptr_equal(r->backend, &be_a);
    r = idm__scheme_find(rows, NROWS, "etcd://h:1/p");
    assert_non_null(r);
    assert_null(r->backend);
    assert_string_equal(r->missing, "IDM_WITH_ETCD=OFF");
    /* Exact names: a prefix or an extension of one is not it. */
    r = idm__scheme_find(rows, NROWS, "postgresql://h/db");
    assert_non_null(r);
    assert_string_equal(r->name, "postgresql");
    assert_null(idm__scheme_find(rows, NROWS, "postgre://h/db"));
    assert_null(idm__scheme_find(rows, NROWS, "files:///x"));
    assert_null(idm__scheme_find(rows, NROWS, "FILE:///x"));
    assert_null(idm__scheme_find(rows, NROWS, "file:/x"));
    assert_null(idm__scheme_find(rows, NROWS, "/tmp/x"));
    assert_null(idm__scheme_find(rows, NROWS, ""));
    assert_null(idm__scheme_find(rows, NROWS, NULL));

    char list[128];
    idm__scheme_list(rows, NROWS, list, sizeof list);
    assert_string_equal(list, "file://, etcd://, postgres://, postgresql://");
    idm__scheme_list(rows, NROWS, list, 8);
    assert_string_equal(list, "file://");
}

/* ---- idm__open_regular and idm__file_kind ---- */

static void test_open_regular(void **state)
{
    (void)state;
    char *dir = idm_test_tmpdir();
    char *reg = idm_test_path(dir, "reg"), *fifo = idm_test_path(dir, "fifo");
    char *missing = idm_test_path(dir, "missing");
    const char *kind = "unset";
    FILE *f = fopen(reg, "w");
    assert_non_null(f);
    fputs("x\n", f);
    fclose(f);
    assert_int_equal(mkfifo(fifo, 0600), 0);

    int fd = idm__open_regular(reg, O_RDONLY, 0, &kind);
    assert_true(fd >= 0);
    assert_null(kind);
    /* O_NONBLOCK was only for the open: the descriptor blocks as asked. */
    assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    assert_int_not_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    close(fd);

    /* A FIFO with no writer: refused at once (this would hang otherwise). */
    errno = 0;
    assert_int_equal(idm__open_regular(fifo, O_RDONLY, 0, &kind), -1);
    assert_int_equal(errno, EINVAL);
    assert_string_equal(kind, "a FIFO");
    assert_int_equal(idm__open_regular(dir, O_RDONLY, 0, &kind), -1);
    assert_int_equal(errno, EINVAL);
    assert_string_equal(kind, "a directory");
    assert_int_equal(idm__open_regular("/dev/null", O_RDONLY, 0, &kind), -1);
    assert_string_equal(kind, "a character device");

    /* A file that is not there: the system's errno, no kind. */
    kind = "unset";
    assert_int_equal(idm__open_regular(missing, O_RDONLY, 0, &kind), -1);
    assert_int_equal(errno, ENOENT);
    assert_null(kind);
    /* Created when asked to. */
    fd = idm__open_regular(missing, O_RDWR | O_CREAT | O_EXCL, 0600, NULL);
    assert_true(fd >= 0);
    close(fd);
    /* O_NOFOLLOW passes through: a link is refused with ELOOP. */
    char *link = idm_test_path(dir, "link");
    assert_int_equal(symlink(reg, link), 0);
    assert_int_equal(idm__open_regular(link, O_RDONLY | O_NOFOLLOW, 0, &kind), -1);
    assert_int_equal(errno, ELOOP);
    fd = idm__open_regular(link, O_RDONLY, 0, &kind);
    assert_true(fd >= 0);
    close(fd);

    assert_string_equal(idm__file_kind(S_IFSOCK), "a socket");
    assert_string_equal(idm__file_kind(S_IFBLK), "a block device");
    assert_string_equal(idm__file_kind(S_IFLNK), "a symbolic link");
    assert_string_equal(idm__file_kind(S_IFREG), "a regular file");

    idm_test_rmtree(dir);
    free(link);
    free(reg);
    free(fifo);
    free(missing);
    free(dir);
}

/* ---- the fault hook ---- */

static char seen[64];
static int fault_hook(const char *site)
{
    snprintf(seen, sizeof seen, "%s", site);
    return strcmp(site, "test.fsync") == 0 ? EIO : 0;
}

static void test_fault_hook(void **state)
{
    (void)state;
    idm__fault_hook = NULL;
    errno = 0;
    assert_int_equal(idm__fault("test.fsync"), 0);
    assert_int_equal(errno, 0);

    idm__fault_hook = fault_hook;
    errno = 0;
    assert_int_equal(idm__fault("test.write"), 0);
    assert_string_equal(seen, "test.write");
    assert_int_equal(errno, 0); /* a site let through leaves errno alone */
    assert_int_equal(idm__fault("test.fsync"), EIO);
    assert_int_equal(errno, EIO);
    assert_string_equal(seen, "test.fsync");
    idm__fault_hook = NULL;
}

/* ---- idm__mono_ns ---- */

static void test_mono(void **state)
{
    (void)state;
    int64_t prev = idm__mono_ns();
    assert_true(prev > 0);
    for (int i = 0; i < 100000; i++) {
        int64_t now = idm__mono_ns();
        assert_true(now >= prev);
        prev = now;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mask_authority), cmocka_unit_test(test_mask_options),
        cmocka_unit_test(test_mask_cut),       cmocka_unit_test(test_scheme_find),
        cmocka_unit_test(test_open_regular),   cmocka_unit_test(test_fault_hook),
        cmocka_unit_test(test_mono),           cmocka_unit_test(test_text_line),
        cmocka_unit_test(test_argv_hide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
