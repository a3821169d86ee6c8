/* SPDX-License-Identifier: MIT */
/*
 * fork() in a process that uses the library (as users of the language
 * bindings do: Python's os.fork(), multiprocessing's fork start method).
 *
 * SQLite ticket stores: threads of the parent take blocks from a store
 * (direct takes, and an allocator whose prefetch thread takes its blocks)
 * while the main thread forks, again and again. Each child must open
 * stores of its own on the same file and on another one and take a block
 * from each within a deadline (SQLite's mutexes must not be copied held
 * into it), and the parent's store and allocator must refuse it
 * (IDM_EFORKED: their connection and blocks are the parent's) and close
 * without hanging. No block a child took overlaps one the parent took, or
 * another child's. And a child's store on the file its parent has open
 * keeps its blocks when the parent closes its store on the file before
 * the child is done (the parent must see the child as a user of the file,
 * or it deletes the WAL under it).
 *
 * Leased generators: a child forked from a process holding one cannot mint
 * under its worker id (IDM_EFORKED) and its close returns at once (no join
 * of the parent's supervisor thread), and writes nothing: the parent's
 * lease file, marks file and claim file are byte for byte as before, the
 * lease still held; the parent then mints and closes as usual, which
 * releases it.
 *
 * A child that hangs is killed after a deadline and fails the test.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <idmint/leased.h>
#include <idmint/segment.h>

#include "testutil.h"

#define CHILD_DEADLINE_MS 20000

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Wait for pid up to CHILD_DEADLINE_MS; a child still running then is
 * killed and fails the test (it hung). Its exit status. */
static int wait_child(pid_t pid, const char *what)
{
    int64_t until = mono_ms() + CHILD_DEADLINE_MS;
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        assert_int_equal(r, 0);
        if (mono_ms() > until) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fail_msg("%s: the child did not end within %d ms: it hung", what,
                     CHILD_DEADLINE_MS);
        }
        sleep_us(2000);
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child exit status %d (%s)", what,
          WIFEXITED(status) ? WEXITSTATUS(status) : -1,
          WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited");
    return status;
}

/* ------------------------------------------------------------ SQLite */

#define FORKS 60
#define TAKE 10          /* a direct take's block */
#define MAX_BLOCKS 200000
#define MAX_IDS 4000000

typedef struct block {
    int64_t first, size;
} block;

typedef struct hammer {
    idm_store *store; /* file a, sequence "f" */
    idm_seq *seq;     /* file a, sequence "f", its own store handle */
    atomic_bool stop;
    block *blocks;    /* the direct takes */
    size_t nblocks;
    int64_t *ids;     /* the allocator's */
    size_t nids;
    int take_rc, seq_rc;
    char detail[256];
} hammer;

static void *hammer_takes(void *arg)
{
    hammer *h = arg;
    while (!atomic_load(&h->stop) && h->nblocks < MAX_BLOCKS) {
        int64_t first = 0;
        int rc = idm_store_take(h->store, "f", TAKE, 0, 1, &first);
        if (rc != 0) {
            h->take_rc = rc;
            snprintf(h->detail, sizeof h->detail, "%s", idm_error_detail());
            break;
        }
        h->blocks[h->nblocks].first = first;
        h->blocks[h->nblocks].size = TAKE;
        h->nblocks++;
    }
    return NULL;
}

/* Ids as fast as they come: small blocks, so the prefetch thread is in
 * the store most of the time. */
static void *hammer_seq(void *arg)
{
    hammer *h = arg;
    while (!atomic_load(&h->stop) && h->nids < MAX_IDS) {
        int64_t id = 0;
        int rc = idm_seq_next(h->seq, &id);
        if (rc != 0) {
            h->seq_rc = rc;
            break;
        }
        h->ids[h->nids++] = id;
    }
    return NULL;
}

/* What a child reports on its pipe. */
typedef struct child_report {
    int64_t first_a, first_b;
} child_report;

/* The child: the parent's store and allocator refused and closed, stores
 * of its own on file a and file b, a block from each. Exit codes name the
 * step that failed. */
static void child_run(hammer *h, const char *url_a, const char *url_b, int fd)
{
    child_report r = {-1, -1};
    idm_store *a = NULL, *b = NULL;
    int64_t id = 0, first = 0;
    int rc;
    if ((rc = idm_seq_next(h->seq, &id)) != IDM_EFORKED) {
        fprintf(stderr, "child: the parent's allocator answered %s (id %lld), not IDM_EFORKED\n",
                idm_err_name(rc), LL(id));
        _exit(10);
    }
    if ((rc = idm_store_take(h->store, "f", TAKE, 0, 1, &first)) != IDM_EFORKED) {
        fprintf(stderr, "child: the parent's store answered %s, not IDM_EFORKED\n",
                idm_err_name(rc));
        _exit(11);
    }
    idm_seq_close(h->seq);
    idm_store_close(h->store);
    /* Another file first: only SQLite's own state in the way there. */
    if ((rc = idm_store_open(&b, url_b)) != 0 || (rc = idm_store_take(b, "g", TAKE, 0, 1,
                                                                      &r.first_b)) != 0) {
        fprintf(stderr, "child: file b: %s: %s\n", idm_err_name(rc), idm_error_detail());
        _exit(13);
    }
    if ((rc = idm_store_open(&a, url_a)) != 0 || (rc = idm_store_take(a, "f", TAKE, 0, 1,
                                                                      &r.first_a)) != 0) {
        fprintf(stderr, "child: file a: %s: %s\n", idm_err_name(rc), idm_error_detail());
        _exit(12);
    }
    idm_store_close(a);
    idm_store_close(b);
    if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
        _exit(14);
    _exit(0);
}

static int cmp_block(const void *x, const void *y)
{
    const block *a = x, *b = y;
    return a->first < b->first ? -1 : a->first > b->first;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

/* Blocks v (sorted by first) do not overlap. */
static void check_disjoint(block *v, size_t n, const char *what)
{
    qsort(v, n, sizeof *v, cmp_block);
    for (size_t i = 1; i < n; i++)
        CHECK(v[i - 1].first + v[i - 1].size <= v[i].first,
              "%s: blocks [%lld, +%lld) and [%lld, +%lld) overlap", what, LL(v[i - 1].first),
              LL(v[i - 1].size), LL(v[i].first), LL(v[i].size));
}

static void sqlite_fork_while_taking(void **state)
{
    char *dir = idm_test_tmpdir(), url_a[4200], url_b[4200];
    hammer h;
    idm_store *seq_store = NULL, *sb = NULL;
    idm_seq_opts so;
    pthread_t t1, t2;
    block *mine = calloc(FORKS * 2 + MAX_BLOCKS, sizeof *mine);
    block child_a[FORKS], child_b[FORKS];
    int64_t fork_max_ms = 0;
    size_t n;
    (void)state;
    assert_non_null(mine);
    memset(&h, 0, sizeof h);
    h.blocks = calloc(MAX_BLOCKS, sizeof *h.blocks);
    h.ids = calloc(MAX_IDS, sizeof *h.ids);
    assert_non_null(h.blocks);
    assert_non_null(h.ids);
    snprintf(url_a, sizeof url_a, "sqlite://%s/a.db", dir);
    snprintf(url_b, sizeof url_b, "sqlite://%s/b.db", dir);
    IDM_ASSERT_OK(idm_store_open(&h.store, url_a));
    IDM_ASSERT_OK(idm_store_create(h.store, "f", 1, 0, 1));
    IDM_ASSERT_OK(idm_store_open(&sb, url_b));
    IDM_ASSERT_OK(idm_store_create(sb, "g", 1, 0, 1));
    idm_store_close(sb);
    IDM_ASSERT_OK(idm_store_open(&seq_store, url_a));
    idm_seq_opts_init(&so);
    so.name = "f";
    so.stores = &seq_store;
    so.nstores = 1;
    so.min_block = 50;
    so.max_block = 50;
    so.prefetch_pct = 90;
    IDM_ASSERT_OK(idm_seq_open(&h.seq, &so));
    assert_int_equal(pthread_create(&t1, NULL, hammer_takes, &h), 0);
    assert_int_equal(pthread_create(&t2, NULL, hammer_seq, &h), 0);

    for (int i = 0; i < FORKS; i++) {
        int p[2];
        pid_t pid;
        int64_t t0;
        child_report r;
        char what[64];
        /* At a different moment of the threads' work each time. */
        sleep_us(1000 + (long)(idm_test_seed() % 7 + (uint64_t)i * 37) % 3000);
        assert_int_equal(pipe(p), 0);
        t0 = mono_ms();
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(p[0]);
            alarm(CHILD_DEADLINE_MS / 1000 + 5); /* never outlive the parent's wait */
            child_run(&h, url_a, url_b, p[1]);
        }
        if (mono_ms() - t0 > fork_max_ms)
            fork_max_ms = mono_ms() - t0;
        close(p[1]);
        snprintf(what, sizeof what, "fork %d", i);
        wait_child(pid, what);
        assert_int_equal(read(p[0], &r, sizeof r), (ssize_t)sizeof r);
        close(p[0]);
        child_a[i] = (block){r.first_a, TAKE};
        child_b[i] = (block){r.first_b, TAKE};
    }
    atomic_store(&h.stop, true);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    print_message("%d forks; the longest fork() took %lld ms; the parent took %zu blocks and "
                  "%zu ids from the allocator meanwhile\n",
                  FORKS, LL(fork_max_ms), h.nblocks, h.nids);
    CHECK(h.take_rc == 0, "the parent's takes: %s (%s)", idm_err_name(h.take_rc), h.detail);
    CHECK(h.seq_rc == 0, "the parent's allocator: %s", idm_err_name(h.seq_rc));
    CHECK(h.nblocks > 0 && h.nids > 0, "the parent's threads took nothing");

    /* File a: the parent's direct blocks and the children's, disjoint; no
     * id of the allocator in a child's block. */
    n = 0;
    for (size_t i = 0; i < h.nblocks; i++)
        mine[n++] = h.blocks[i];
    for (int i = 0; i < FORKS; i++)
        mine[n++] = child_a[i];
    check_disjoint(mine, n, "file a");
    qsort(child_a, FORKS, sizeof child_a[0], cmp_block);
    qsort(h.ids, h.nids, sizeof h.ids[0], cmp_i64);
    for (size_t i = 1; i < h.nids; i++)
        CHECK(h.ids[i - 1] != h.ids[i], "the allocator handed out %lld twice", LL(h.ids[i]));
    for (int i = 0; i < FORKS; i++) {
        /* The first allocator id at or above the child's block. */
        size_t lo = 0, hi = h.nids;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (h.ids[mid] < child_a[i].first)
                lo = mid + 1;
            else
                hi = mid;
        }
        CHECK(lo == h.nids || h.ids[lo] >= child_a[i].first + child_a[i].size,
              "the parent's allocator handed out %lld, in child %d's block from %lld",
              LL(h.ids[lo]), i, LL(child_a[i].first));
        /* Nor in a direct block of the parent's: checked above. */
    }
    check_disjoint(child_b, FORKS, "file b");

    idm_seq_close(h.seq);
    idm_store_close(seq_store);
    idm_store_close(h.store);
    free(h.blocks);
    free(h.ids);
    free(mine);
    idm_test_rmtree(dir);
    free(dir);
}

/* A child's store on a file its parent has open counts as a user of the
 * file for other processes, as any other process's does: when the parent
 * then closes its last store on the file (SQLite's last connection of a
 * process that sees no other user checkpoints and deletes the WAL), the
 * child's later blocks still reach the file, and a store opened afterwards
 * hands out none of them again. (SQLite's per-file lock records in the child
 * are the parent's copy, and count the parent's connections as its own.) */
static void sqlite_child_outlives_parent_close(void **state)
{
    char *dir = idm_test_tmpdir(), url[4200];
    idm_store *s = NULL;
    int to_child[2], to_parent[2];
    int64_t got[2] = {-1, -1}, first = 0;
    char c = 'x';
    pid_t pid;
    (void)state;
    snprintf(url, sizeof url, "sqlite://%s/a.db", dir);
    IDM_ASSERT_OK(idm_store_open(&s, url));
    IDM_ASSERT_OK(idm_store_create(s, "h", 1, 0, 1));
    IDM_ASSERT_OK(idm_store_take(s, "h", TAKE, 0, 1, &first));
    assert_int_equal(pipe(to_child), 0);
    assert_int_equal(pipe(to_parent), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        idm_store *cs = NULL;
        int rc;
        alarm(CHILD_DEADLINE_MS / 1000 + 5);
        close(to_child[1]);
        close(to_parent[0]);
        if ((rc = idm_store_open(&cs, url)) != 0 ||
            (rc = idm_store_take(cs, "h", TAKE, 0, 1, &got[0])) != 0) {
            fprintf(stderr, "child: %s: %s\n", idm_err_name(rc), idm_error_detail());
            _exit(10);
        }
        /* The parent closes its store now. */
        if (write(to_parent[1], &c, 1) != 1 || read(to_child[0], &c, 1) != 1)
            _exit(11);
        if ((rc = idm_store_take(cs, "h", TAKE, 0, 1, &got[1])) != 0) {
            fprintf(stderr, "child: after the parent's close: %s: %s\n", idm_err_name(rc),
                    idm_error_detail());
            _exit(12);
        }
        idm_store_close(cs);
        if (write(to_parent[1], got, sizeof got) != (ssize_t)sizeof got)
            _exit(13);
        _exit(0);
    }
    close(to_child[0]);
    close(to_parent[1]);
    assert_int_equal(read(to_parent[0], &c, 1), 1);
    idm_store_close(s); /* the parent's last connection to the file */
    assert_int_equal(write(to_child[1], &c, 1), 1);
    wait_child(pid, "outlives");
    assert_int_equal(read(to_parent[0], got, sizeof got), (ssize_t)sizeof got);
    close(to_parent[0]);
    close(to_child[1]);
    /* Every block the child took is in the file: the next is past them. */
    IDM_ASSERT_OK(idm_store_open(&s, url));
    IDM_ASSERT_OK(idm_store_take(s, "h", TAKE, 0, 1, &first));
    CHECK(first >= got[0] + TAKE && first >= got[1] + TAKE,
          "block %lld handed out again: the child took %lld and %lld, and its second one was "
          "lost", LL(first), LL(got[0]), LL(got[1]));
    idm_store_close(s);
    idm_test_rmtree(dir);
    free(dir);
}

/* ------------------------------------------------------------ leased */

/* The whole content of a file; NULL if it cannot be read. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0;
    if (f == NULL)
        return NULL;
    for (;;) {
        if (n == cap) {
            cap = cap == 0 ? 8192 : cap * 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* The files of dir whose names start with prefix (no lock files), each
 * with its content, as "name\0content" records in one buffer. */
static char *snapshot(const char *dir, const char *prefix, size_t *len)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char *out = NULL;
    size_t n = 0;
    char *names[64];
    size_t nn = 0;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL && nn < 64)
        if (e->d_name[0] != '.' && strncmp(e->d_name, prefix, strlen(prefix)) == 0 &&
            strstr(e->d_name, ".lock") == NULL)
            names[nn++] = strdup(e->d_name);
    closedir(d);
    /* readdir's order is the directory's: sort for a stable record. */
    for (size_t i = 1; i < nn; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    for (size_t i = 0; i < nn; i++) {
        char *path = idm_test_path(dir, names[i]), *c;
        size_t clen = 0, nlen = strlen(names[i]) + 1;
        c = slurp(path, &clen);
        assert_non_null(c);
        out = realloc(out, n + nlen + clen + 1);
        assert_non_null(out);
        memcpy(out + n, names[i], nlen);
        memcpy(out + n + nlen, c, clen);
        n += nlen + clen;
        free(c);
        free(path);
        free(names[i]);
    }
    *len = n;
    return out;
}

static bool same_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* Whether worker id w is held, and its recorded mark. */
static bool listed_held(const char *url, uint32_t w, idm_unix_ms *mark)
{
    idm_lease_entry *v = NULL;
    size_t count = 0;
    bool held = false;
    IDM_ASSERT_OK(idm_lease_list(url, 0, &v, &count));
    for (size_t i = 0; i < count; i++)
        if (v[i].worker == w) {
            held = v[i].held;
            *mark = v[i].mark_ms;
        }
    free(v);
    return held;
}

static void leased_fork_child_close(void **state)
{
    char *dir = idm_test_tmpdir(), *leases = idm_test_path(dir, "leases"),
         *states = idm_test_path(dir, "state"), *marks = idm_test_path(dir, "leases/marks");
    char url[4200];
    idm_layout *layout = NULL;
    idm_leased_opts o;
    idm_leased *lg = NULL;
    idm_leased_status st;
    idm_unix_ms mark_before = 0, mark_after = 0, mark_released = 0;
    uint64_t a = 0, b = 0;
    char *lease_snap, *marks_snap, *claim_snap, *snap;
    size_t lease_len, marks_len, claim_len, len;
    idm_decoded dec;
    pid_t pid;
    uint32_t w;
    (void)state;
    snprintf(url, sizeof url, "file://%s", leases);
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    idm_leased_opts_init(&o);
    o.lease.url = url;
    /* Long enough that no renewal writes the files while the child runs. */
    o.lease.ttl_ms = 120000;
    o.gen.layout = layout;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o.gen, "datacenter", 1));
    o.field = "worker";
    o.state_dir = states;
    IDM_ASSERT_OK(idm_leased_open(&lg, &o));
    IDM_ASSERT_OK(idm_leased_next(lg, &a));
    idm_leased_status_get(lg, &st);
    w = st.worker;
    assert_true(listed_held(url, w, &mark_before));
    lease_snap = snapshot(leases, "worker-", &lease_len);
    marks_snap = snapshot(marks, "worker-", &marks_len);
    claim_snap = snapshot(states, "", &claim_len);
    CHECK(lease_len > 0 && claim_len > 0, "no lease or claim file to compare");

    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        uint64_t id = 0;
        int rc;
        alarm(CHILD_DEADLINE_MS / 1000 + 5);
        if ((rc = idm_leased_next(lg, &id)) != IDM_EFORKED) {
            fprintf(stderr, "child: idm_leased_next answered %s (id %llu), not IDM_EFORKED\n",
                    idm_err_name(rc), ULL(id));
            _exit(10);
        }
        if ((rc = idm_leased_next_batch(lg, &id, 1)) != IDM_EFORKED) {
            fprintf(stderr, "child: idm_leased_next_batch answered %s, not IDM_EFORKED\n",
                    idm_err_name(rc));
            _exit(11);
        }
        idm_leased_status_get(lg, &st);
        if (st.last_error != IDM_EFORKED || st.minting) {
            fprintf(stderr, "child: status: last_error %s, minting %d\n",
                    idm_err_name(st.last_error), (int)st.minting);
            _exit(12);
        }
        if ((rc = idm_leased_close(lg)) != IDM_EFORKED) {
            fprintf(stderr, "child: idm_leased_close answered %s, not IDM_EFORKED\n",
                    idm_err_name(rc));
            _exit(13);
        }
        _exit(0);
    }
    wait_child(pid, "leased");

    /* Nothing the child did reached the parent's files. */
    snap = snapshot(leases, "worker-", &len);
    CHECK(same_bytes(snap, len, lease_snap, lease_len), "the child changed the lease file");
    free(snap);
    snap = snapshot(marks, "worker-", &len);
    CHECK(same_bytes(snap, len, marks_snap, marks_len), "the child changed the marks file");
    free(snap);
    snap = snapshot(states, "", &len);
    CHECK(same_bytes(snap, len, claim_snap, claim_len),
          "the child changed the claim or state files");
    free(snap);
    CHECK(listed_held(url, w, &mark_after), "worker id %u is no longer held after the child's "
                                            "close", (unsigned)w);
    assert_int_equal(mark_after, mark_before);

    /* The parent goes on, and its close releases. */
    IDM_ASSERT_OK(idm_leased_next(lg, &b));
    assert_true(b > a);
    IDM_ASSERT_OK(idm_leased_close(lg));
    CHECK(!listed_held(url, w, &mark_released), "worker id %u still held after the parent's "
                                                "close", (unsigned)w);
    IDM_ASSERT_OK(idm_layout_decode(layout, b, &dec));
    CHECK(mark_released >= dec.unix_ms,
          "the released mark %lld is below the parent's last id's time %lld",
          LL(mark_released), LL(dec.unix_ms));

    free(lease_snap);
    free(marks_snap);
    free(claim_snap);
    idm_layout_free(layout);
    idm_test_rmtree(dir);
    free(marks);
    free(states);
    free(leases);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sqlite_fork_while_taking),
        cmocka_unit_test(sqlite_child_outlives_parent_close),
        cmocka_unit_test(leased_fork_child_close),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
