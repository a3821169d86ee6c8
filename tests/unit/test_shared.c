/* SPDX-License-Identifier: MIT */
/*
 * Shared generators (idm_snowflake_open_shared, idm_uuid7_gen_init_shared,
 * idm_ulid_gen_init_shared): one generator in MAP_SHARED memory that forked
 * processes mint on at once.
 *
 * Snowflake: four children mint 200,000 ids each (single ids and batches
 * mixed) on one generator with a state file: each child's ids increase, none
 * repeats across children, all carry the node values, no child is refused as
 * forked (a private generator still is), and the parent's counters and the
 * state file's mark cover every id. The lease guard given and dropped by the
 * parent starts and stops minting in the children. A close by the opener
 * after the children exited stores the exact mark, and a reopen (shared or
 * private) mints above every earlier id. Bad memory is refused and leaves
 * nothing. The state file's paths live in the shared memory: opened through
 * a relative path to a symbolic link, the caller's string then overwritten,
 * the file is rewritten by a child forked before the open (whose heap holds
 * none of the generator) and by one forked after it into another directory.
 *
 * UUIDv7 and ULID: four children on one generator on a clock frozen at one
 * millisecond, so only the shared sequence orders them: each child's ids
 * increase and lie above the parent's id taken before the fork (a generator
 * reset in the child would start from fresh random bits; an injected rng
 * makes those bits zero, so a reset is always caught), and none repeats.
 */
#include "testids.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum {
    KIDS = 4,
    PER_KID = 200000,   /* Snowflake ids a child mints in the big run */
    SMALL_PER_KID = 20000,
    MAX_BATCH = 64,     /* well under the 6 ms wait bound's 24,576 states */
    GUARD_READY = 2000, /* ids a child mints under the guard before the drop */
    GUARD_CAP = 262144, /* room for a child still minting when the drop lands */
    CROSS_MS = 20,      /* how far past its first id a child mints (lookahead 1 ms) */
    PER_KID_128 = 50000,
    KID_DEADLINE_S = 60 /* a child stuck on a lock dies instead of hanging the suite */
};

#define NODE_DC 5
#define NODE_WORKER 9
#define T_FROZEN INT64_C(1767225600000) /* 2026-01-01T00:00:00Z */
#define MS_NS INT64_C(1000000)
#define S_NS INT64_C(1000000000)

/* ---- shared memory and children ---- */

/* n zeroed bytes of MAP_SHARED anonymous memory: children forked later see
 * it at the same address, and their writes reach the parent. */
static void *shm_new(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED, "mmap of %zu shared bytes: %s", n, strerror(errno));
    return p;
}

static void shm_free(void *p, size_t n) { assert_int_equal(munmap(p, n), 0); }

/* What a child did, written into shared memory for the parent to check. */
typedef struct kid_report {
    int rc;             /* 0, or the code of the call that went wrong */
    char what[320];     /* that call, what it returned and its detail */
    size_t n;           /* ids minted */
    int private_rc, private_batch_rc; /* a private generator in the child */
    int before_rc, stop_rc, after_rc, after_batch_rc, check_rc; /* guard */
    idm_unix_ms first_ms, last_ms, mark_after;                  /* crossing */
    uint64_t writes_before, writes_after;
    int state_error;
    int vec_pending; /* the injected rng's pending vector, after minting */
} kid_report;

/* Records that call failed with rc; returns the child's exit status. The
 * detail may name a path read from broken memory: bytes that are not
 * printable ASCII are shown as '?'. */
static int kid_fail(kid_report *r, int rc, const char *call)
{
    r->rc = rc;
    snprintf(r->what, sizeof r->what, "%s returned %s (%d): %s", call, idm_err_name(rc), rc,
             idm_error_detail());
    for (char *c = r->what; *c != '\0'; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
            *c = '?';
    return 1;
}

/* Children not reaped yet, and the directory the tests start in: a failed
 * check leaves the test function at once, and cleanup (each test's
 * teardown) kills and reaps what it left running and goes back there. */
static pid_t live[2 * KIDS];
static char start_cwd[4096];

static int cleanup(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof live / sizeof live[0]; i++) {
        if (live[i] > 0) {
            kill(live[i], SIGKILL);
            waitpid(live[i], NULL, 0);
            live[i] = 0;
        }
    }
    return chdir(start_cwd) == 0 ? 0 : -1;
}

/* Replaces old (0: a free slot) with now in live. */
static void live_set(pid_t old, pid_t now)
{
    for (size_t i = 0; i < sizeof live / sizeof live[0]; i++) {
        if (live[i] == old) {
            live[i] = now;
            return;
        }
    }
    if (old == 0)
        fail_msg("more than %zu children at once", sizeof live / sizeof live[0]);
    fail_msg("process %ld is not a child this test started", (long)old);
}

typedef int (*kid_fn)(void *arg, int k);

/* Forks child k to run fn(arg, k) and exit with what it returns. Signals
 * go back to their defaults there, so a crash kills the child instead of
 * landing in cmocka's handler (which would run the remaining tests in it),
 * and SIGALRM ends a child stuck past KID_DEADLINE_S. */
static pid_t spawn(kid_fn fn, void *arg, int k)
{
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGALRM};
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        sigset_t set;
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            signal(sigs[i], SIG_DFL);
        sigemptyset(&set);
        sigaddset(&set, SIGALRM);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        alarm(KID_DEADLINE_S);
        _exit(fn(arg, k));
    }
    live_set(0, pid);
    return pid;
}

/* Waits for child k; fails the test, saying what the child reported, unless
 * it exited with status 0. */
static void reap(pid_t pid, int k, const kid_report *r)
{
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    live_set(pid, 0);
    if (WIFSIGNALED(status))
        fail_msg("child %d died of signal %d%s", k, WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? " (stuck past its deadline)" : "");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d exited with %d: %s", k,
          WEXITSTATUS(status), r->what[0] != '\0' ? r->what : "(no report)");
}

/* Two pipes between the parent and a child: up (child to parent) and down. */
typedef struct kid_link {
    int up[2], down[2];
    pid_t pid;
} kid_link;

static void link_open(kid_link *l)
{
    assert_int_equal(pipe(l->up), 0);
    assert_int_equal(pipe(l->down), 0);
}

/* In child k: keep its own ends, close the parent's ends of children
 * 0..k (later children's pipes do not exist yet). */
static void link_child_side(kid_link *links, int k)
{
    for (int j = 0; j <= k; j++) {
        close(links[j].up[0]);
        close(links[j].down[1]);
    }
}

/* In the parent, after forking the child. */
static void link_parent_side(kid_link *l)
{
    close(l->up[1]);
    close(l->down[0]);
}

static void link_close(kid_link *l)
{
    close(l->up[0]);
    close(l->down[1]);
}

static int put_byte(int fd, char c) { return idm_test_write_all(fd, &c, 1); }

/* In a child: 0 if the next byte from the parent is want; else -1, and
 * r->what says so. */
static int take_byte(int fd, char want, kid_report *r)
{
    char c = 0;
    if (idm_test_read_all(fd, &c, 1) == 1 && c == want)
        return 0;
    snprintf(r->what, sizeof r->what, "waiting for '%c', the parent's pipe gave '%c' or closed",
             want, c);
    return -1;
}

/* In the parent: the next byte from child k must be want. */
static void expect_byte(const kid_link *l, int k, char want, const kid_report *r)
{
    char c = 0;
    if (idm_test_read_all(l->up[0], &c, 1) != 1)
        fail_msg("child %d closed its pipe before sending '%c': %s", k, want,
                 r->what[0] != '\0' ? r->what : "(no report)");
    CHECK(c == want, "child %d sent '%c', expected '%c'", k, c, want);
}

/* ---- the state file, read independently of the library ---- */

/* The mark of the state file at path, read as state.h gives the format,
 * "idmint-state 1 <mark> <crc>\n" (crc: 8 lower-case hex digits of the
 * CRC-32 of the bytes before the last space); fails the test on anything
 * else. */
static idm_unix_ms file_mark(const char *path)
{
    char buf[128], want[9];
    FILE *f = fopen(path, "rb");
    size_t n, body;
    idm_unix_ms mark = 0;
    static const char magic[] = "idmint-state 1 ";
    CHECK(f != NULL, "cannot open the state file %s: %s", path, strerror(errno));
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    CHECK(n > sizeof magic + 9 && buf[n - 1] == '\n' && buf[n - 10] == ' ' &&
              memcmp(buf, magic, sizeof magic - 1) == 0,
          "state file %s is not one line \"idmint-state 1 <mark> <crc>\": '%s'", path, buf);
    body = n - 10;
    for (size_t i = sizeof magic - 1; i < body; i++) {
        CHECK(buf[i] >= '0' && buf[i] <= '9', "state file %s: mark has '%c'", path, buf[i]);
        mark = mark * 10 + (buf[i] - '0');
    }
    snprintf(want, sizeof want, "%08x", (unsigned)idm_test_crc32(buf, body));
    CHECK(memcmp(buf + body + 1, want, 8) == 0, "state file %s has CRC %.8s, expected %s", path,
          buf + body + 1, want);
    return mark;
}

/* The names in dir but . and .., sorted and joined by spaces, into out. */
static void list_dir(const char *dir, char *out, size_t cap)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    size_t at = 0;
    CHECK(n >= 0, "cannot list %s: %s", dir, strerror(errno));
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *s = names[i]->d_name;
        if (strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && at < cap)
            at += (size_t)snprintf(out + at, cap - at, "%s%s", at > 0 ? " " : "", s);
        free(names[i]);
    }
    free(names);
}

/* ---- Snowflake helpers ---- */

static idm_layout *twitter(void)
{
    idm_layout *l = NULL;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    return l;
}

/* Options for node values (NODE_DC, worker) on l; a state file if path. */
static void sf_opts(idm_snowflake_opts *o, const idm_layout *l, uint64_t worker,
                    const char *path)
{
    idm_snowflake_opts_init(o);
    o->layout = l;
    IDM_ASSERT_OK(idm_snowflake_opts_node(o, "datacenter", NODE_DC));
    IDM_ASSERT_OK(idm_snowflake_opts_node(o, "worker", worker));
    o->state_path = path;
    o->state_fresh = true;
}

static idm_unix_ms id_ms(const idm_layout *l, uint64_t id)
{
    idm_decoded d;
    IDM_ASSERT_OK(idm_layout_decode(l, id, &d));
    return d.unix_ms;
}

/* The layout a shared generator reports must be a copy inside its memory. */
static void check_layout_inside(const idm_snowflake *g, const void *mem, size_t size)
{
    const char *p = (const char *)idm_snowflake_layout(g), *m = mem;
    CHECK(p >= m && p < m + size, "the shared generator's layout is at %p, outside its memory "
                                  "%p + %zu",
          (const void *)p, mem, size);
}

/* Mints into ids[r->n ..] until r->n reaches want, at random one id at a
 * time or a batch of 2 to MAX_BATCH. Returns 0, or the code of the first
 * failure (r->what says which call). */
static int mint_some(idm_snowflake *g, uint64_t *ids, size_t want, idm_test_rng *rng,
                     kid_report *r)
{
    while (r->n < want) {
        size_t k = 1;
        int rc;
        if (idm_test_rng_range(rng, 0, 1) != 0)
            k = (size_t)idm_test_rng_range(rng, 2, MAX_BATCH);
        if (k > want - r->n)
            k = want - r->n;
        rc = k == 1 ? idm_snowflake_next(g, &ids[r->n])
                    : idm_snowflake_next_batch(g, &ids[r->n], k);
        if (rc != 0) {
            kid_fail(r, rc, k == 1 ? "idm_snowflake_next" : "idm_snowflake_next_batch");
            return rc;
        }
        r->n += k;
    }
    return 0;
}

/* Checks the children's ids (child k's r[k].n ids at ids + k * stride):
 * each child's strictly increase, none repeats across children, every one
 * carries the node values. Returns the highest id. */
static uint64_t check_kid_ids(const idm_layout *l, const uint64_t *ids, size_t stride,
                              const kid_report *r)
{
    size_t total = 0, dups;
    uint64_t *all;
    int dc = idm_layout_field_index(l, "datacenter"), worker = idm_layout_field_index(l, "worker");
    assert_true(dc >= 0 && worker >= 0);
    for (int k = 0; k < KIDS; k++) {
        const uint64_t *mine = ids + (size_t)k * stride;
        CHECK(r[k].n > 0, "child %d minted nothing", k);
        for (size_t i = 1; i < r[k].n; i++)
            if (mine[i] <= mine[i - 1])
                fail_msg("child %d: id %zu (%llu) is not above id %zu (%llu)", k, i,
                         ULL(mine[i]), i - 1, ULL(mine[i - 1]));
        total += r[k].n;
    }
    all = malloc(total * sizeof *all);
    assert_non_null(all);
    total = 0;
    for (int k = 0; k < KIDS; k++) {
        memcpy(all + total, ids + (size_t)k * stride, r[k].n * sizeof *all);
        total += r[k].n;
    }
    dups = idm_test_count_duplicates(all, total); /* sorts */
    CHECK(dups == 0, "%zu of %zu ids were minted twice across the children", dups, total);
    for (size_t i = 0; i < total; i++) {
        idm_decoded d;
        IDM_ASSERT_OK(idm_layout_decode(l, all[i], &d));
        if (d.value[dc] != NODE_DC || d.value[worker] != NODE_WORKER)
            fail_msg("id %llu carries datacenter %llu worker %llu, expected %d and %d",
                     ULL(all[i]), ULL(d.value[dc]), ULL(d.value[worker]), NODE_DC, NODE_WORKER);
    }
    uint64_t max = all[total - 1];
    free(all);
    return max;
}

/* ---- 1. four children on one generator ---- */

typedef struct sf_run {
    idm_snowflake *g;
    idm_snowflake *private_g; /* opened by the parent with idm_snowflake_open */
    uint64_t *ids;
    size_t per_kid;
    kid_report *rep;
    uint64_t seed;
} sf_run;

static int kid_mint(void *arg, int k)
{
    sf_run *a = arg;
    kid_report *r = &a->rep[k];
    idm_test_rng rng;
    uint64_t x[2];
    if (a->private_g != NULL) {
        r->private_rc = idm_snowflake_next(a->private_g, &x[0]);
        r->private_batch_rc = idm_snowflake_next_batch(a->private_g, x, 2);
    }
    idm_test_rng_init(&rng, a->seed + (uint64_t)k);
    return mint_some(a->g, a->ids + (size_t)k * a->per_kid, a->per_kid, &rng, r) == 0 ? 0 : 1;
}

/* Forks KIDS children minting per_kid ids each on g and waits for them;
 * returns the highest id. */
static uint64_t run_kids(idm_snowflake *g, idm_snowflake *private_g, const idm_layout *l,
                         size_t per_kid, kid_report **rep_out)
{
    size_t ids_bytes = KIDS * per_kid * sizeof(uint64_t);
    sf_run a = {g, private_g, shm_new(ids_bytes), per_kid, NULL, idm_test_seed()};
    pid_t pids[KIDS];
    uint64_t max;
    a.rep = shm_new(KIDS * sizeof *a.rep);
    for (int k = 0; k < KIDS; k++)
        pids[k] = spawn(kid_mint, &a, k);
    for (int k = 0; k < KIDS; k++)
        reap(pids[k], k, &a.rep[k]);
    for (int k = 0; k < KIDS; k++)
        CHECK(a.rep[k].n == per_kid, "child %d minted %zu ids of %zu", k, a.rep[k].n, per_kid);
    max = check_kid_ids(l, a.ids, per_kid, a.rep);
    shm_free(a.ids, ids_bytes);
    *rep_out = a.rep;
    return max;
}

/* Four children mint 200,000 ids each on a shared generator with a state
 * file, single ids and batches mixed: each child's ids increase, none
 * repeats, all carry the node values, none is refused as forked; a private
 * generator opened by the parent is refused in each child. The parent's
 * counters and the state file's mark cover every id. */
static void snowflake_shared_four_children(void **state)
{
    char *dir = idm_test_tmpdir(), *path = idm_test_path(dir, "gen.state");
    idm_layout *l = twitter();
    idm_snowflake_opts o, po;
    idm_snowflake *g = NULL, *priv = NULL;
    idm_snowflake_stats st;
    size_t size = idm_snowflake_shared_size();
    void *mem = shm_new(size);
    kid_report *rep;
    uint64_t max, next;
    idm_unix_ms max_ms, mark;
    (void)state;

    sf_opts(&o, l, NODE_WORKER, path);
    IDM_ASSERT_OK(idm_snowflake_open_shared(&g, mem, size, &o));
    check_layout_inside(g, mem, size);
    sf_opts(&po, l, NODE_WORKER + 1, NULL);
    IDM_ASSERT_OK(idm_snowflake_open(&priv, &po));

    max = run_kids(g, priv, l, PER_KID, &rep);
    max_ms = id_ms(l, max);
    for (int k = 0; k < KIDS; k++) {
        CHECK(rep[k].private_rc == IDM_EFORKED,
              "child %d: idm_snowflake_next on the parent's private generator returned %s, "
              "expected IDM_EFORKED", k, idm_err_name(rep[k].private_rc));
        CHECK(rep[k].private_batch_rc == IDM_EFORKED,
              "child %d: idm_snowflake_next_batch on the parent's private generator returned "
              "%s, expected IDM_EFORKED", k, idm_err_name(rep[k].private_batch_rc));
    }

    /* The parent sees what the children did. */
    idm_snowflake_stats_get(g, &st);
    CHECK(st.last_unix_ms >= max_ms, "the parent's last_unix_ms %lld is below the children's "
                                     "highest id time %lld",
          LL(st.last_unix_ms), LL(max_ms));
    CHECK(st.state_error == 0, "state file error %s", idm_err_name(st.state_error));
    mark = file_mark(path);
    CHECK(mark >= max_ms, "the state file's mark %lld is below the highest id time %lld",
          LL(mark), LL(max_ms));
    CHECK(mark == st.state_mark_ms, "the state file holds %lld, the counters say %lld", LL(mark),
          LL(st.state_mark_ms));
    IDM_ASSERT_OK(idm_snowflake_next(g, &next));
    CHECK(next > max, "the parent's id %llu after the children is not above their highest %llu",
          ULL(next), ULL(max));
    IDM_ASSERT_OK(idm_snowflake_next(priv, &next)); /* still the parent's */

    IDM_ASSERT_OK(idm_snowflake_close(priv));
    IDM_ASSERT_OK(idm_snowflake_close(g));
    shm_free(rep, KIDS * sizeof *rep);
    shm_free(mem, size);
    idm_layout_free(l);
    idm_test_rmtree(dir);
    free(path);
    free(dir);
}

/* ---- 2. the lease guard across processes ---- */

typedef struct guard_run {
    idm_snowflake *g;
    uint64_t *ids;
    kid_report *rep;
    kid_link *links;
    uint64_t seed;
} guard_run;

/* Child k: refused before any guard ('a'), mints GUARD_READY ids once told
 * the guard is given ('g'), says so ('b') and mints on until refused (or
 * out of room); once told of the drop ('d'), every call is refused. */
static int kid_guarded(void *arg, int k)
{
    guard_run *a = arg;
    kid_report *r = &a->rep[k];
    kid_link *l = &a->links[k];
    uint64_t *ids = a->ids + (size_t)k * GUARD_CAP, x[4];
    idm_test_rng rng;
    link_child_side(a->links, k);
    idm_test_rng_init(&rng, a->seed + (uint64_t)k);
    r->before_rc = idm_snowflake_next(a->g, &x[0]);
    if (put_byte(l->up[1], 'a') != 0 || take_byte(l->down[0], 'g', r) != 0)
        return 2;
    if (mint_some(a->g, ids, GUARD_READY, &rng, r) != 0)
        return 1;
    if (put_byte(l->up[1], 'b') != 0)
        return 2;
    r->stop_rc = mint_some(a->g, ids, GUARD_CAP, &rng, r);
    if (r->stop_rc == IDM_ELEASE) {
        r->rc = 0; /* the drop, expected */
        r->what[0] = '\0';
    }
    if (take_byte(l->down[0], 'd', r) != 0)
        return 2;
    r->after_rc = idm_snowflake_next(a->g, &x[0]);
    r->after_batch_rc = idm_snowflake_next_batch(a->g, x, 4);
    r->check_rc = idm_snowflake_check(a->g);
    return r->stop_rc == 0 || r->stop_rc == IDM_ELEASE ? 0 : 1;
}

/* A guarded shared generator: children are refused before the parent
 * gives the guard, mint under it, and are refused (single ids, batches,
 * idm_snowflake_check) once the parent dropped it; every id a child was
 * handed has a time at or below what the parent reads right after the
 * drop. Pipes order the steps; nothing waits on time. */
static void snowflake_shared_guard_across_processes(void **state)
{
    idm_layout *l = twitter();
    idm_snowflake_opts o;
    idm_snowflake *g = NULL;
    idm_snowflake_stats st;
    const idm_clock *sys = idm_clock_system();
    size_t size = idm_snowflake_shared_size(), ids_bytes = KIDS * (size_t)GUARD_CAP * 8;
    void *mem = shm_new(size);
    kid_link links[KIDS];
    guard_run a;
    uint64_t max, id = 0;
    idm_unix_ms after_drop, now_ms;
    int cut = 0;
    (void)state;

    sf_opts(&o, l, NODE_WORKER, NULL);
    o.guarded = true;
    IDM_ASSERT_OK(idm_snowflake_open_shared(&g, mem, size, &o));
    a = (guard_run){g, shm_new(ids_bytes), shm_new(KIDS * sizeof(kid_report)), links,
                    idm_test_seed()};
    for (int k = 0; k < KIDS; k++) {
        link_open(&links[k]);
        links[k].pid = spawn(kid_guarded, &a, k);
        link_parent_side(&links[k]);
    }
    for (int k = 0; k < KIDS; k++)
        expect_byte(&links[k], k, 'a', &a.rep[k]);

    now_ms = sys->wall_ns(sys->ctx) / MS_NS;
    IDM_ASSERT_OK(idm_snowflake_guard(g, sys->mono_ns(sys->ctx) + 600 * S_NS,
                                      sys->wall_ns(sys->ctx) + 600 * S_NS, now_ms + 3600000));
    for (int k = 0; k < KIDS; k++)
        assert_int_equal(put_byte(links[k].down[1], 'g'), 0);
    for (int k = 0; k < KIDS; k++)
        expect_byte(&links[k], k, 'b', &a.rep[k]);
    idm_snowflake_guard_drop(g);
    idm_snowflake_stats_get(g, &st);
    after_drop = st.last_unix_ms;
    for (int k = 0; k < KIDS; k++)
        assert_int_equal(put_byte(links[k].down[1], 'd'), 0);
    for (int k = 0; k < KIDS; k++) {
        reap(links[k].pid, k, &a.rep[k]);
        link_close(&links[k]);
    }

    for (int k = 0; k < KIDS; k++) {
        const kid_report *r = &a.rep[k];
        CHECK(r->before_rc == IDM_ELEASE, "child %d minted before any guard: %s", k,
              idm_err_name(r->before_rc));
        CHECK(r->after_rc == IDM_ELEASE, "child %d: idm_snowflake_next after the parent's drop "
                                         "returned %s, expected IDM_ELEASE",
              k, idm_err_name(r->after_rc));
        CHECK(r->after_batch_rc == IDM_ELEASE, "child %d: idm_snowflake_next_batch after the "
                                               "drop returned %s, expected IDM_ELEASE",
              k, idm_err_name(r->after_batch_rc));
        CHECK(r->check_rc == IDM_ELEASE, "child %d: idm_snowflake_check after the drop "
                                         "returned %s, expected IDM_ELEASE",
              k, idm_err_name(r->check_rc));
        CHECK(r->n >= GUARD_READY, "child %d minted %zu ids under the guard", k, r->n);
        cut += r->stop_rc == IDM_ELEASE;
    }
    max = check_kid_ids(l, a.ids, GUARD_CAP, a.rep);
    CHECK(id_ms(l, max) <= after_drop, "a child was handed an id of %lld ms, after the parent "
                                       "read %lld right after the drop",
          LL(id_ms(l, max)), LL(after_drop));
    idm_snowflake_stats_get(g, &st);
    /* Each child was refused before the guard, after the drop (a single id
     * and a batch) and, if the drop cut its run, once more. */
    CHECK(st.refused_lease >= (uint64_t)(3 * KIDS + cut),
          "refused_lease %llu, under the %d refusals of the children: they are not counted in "
          "the shared generator", ULL(st.refused_lease), 3 * KIDS + cut);
    print_message("# %d of %d children were minting when the drop landed\n", cut, KIDS);

    /* The parent is refused too, until it gives the guard again. */
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    now_ms = sys->wall_ns(sys->ctx) / MS_NS;
    IDM_ASSERT_OK(idm_snowflake_guard(g, sys->mono_ns(sys->ctx) + 600 * S_NS,
                                      sys->wall_ns(sys->ctx) + 600 * S_NS, now_ms + 3600000));
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    CHECK(id > max, "the parent's id after a new guard is not above the children's");

    IDM_ASSERT_OK(idm_snowflake_close(g));
    shm_free(a.ids, ids_bytes);
    shm_free(a.rep, KIDS * sizeof(kid_report));
    shm_free(mem, size);
    idm_layout_free(l);
}

/* ---- 3. close by the opener, then a reopen ---- */

/* After the children exited, the opener's close stores the exact mark: the
 * start of the highest id's tick. Reopened on that file, shared (in the
 * same memory) and then private, the generator mints above every earlier
 * id. */
static void snowflake_shared_close_exact_mark_reopen(void **state)
{
    char *dir = idm_test_tmpdir(), *path = idm_test_path(dir, "gen.state");
    idm_layout *l = twitter();
    idm_snowflake_opts o;
    idm_snowflake *g = NULL;
    size_t size = idm_snowflake_shared_size();
    void *mem = shm_new(size);
    kid_report *rep;
    uint64_t max, id;
    idm_unix_ms max_ms, mark;
    (void)state;

    sf_opts(&o, l, NODE_WORKER, path);
    IDM_ASSERT_OK(idm_snowflake_open_shared(&g, mem, size, &o));
    max = run_kids(g, NULL, l, SMALL_PER_KID, &rep);
    max_ms = id_ms(l, max);
    mark = file_mark(path);
    CHECK(mark >= max_ms, "the mark %lld while open is below the highest id time %lld", LL(mark),
          LL(max_ms));
    /* A user's close is refused and changes nothing: the opener mints on. */
    {
        int status;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            _exit(idm_snowflake_close(g) == IDM_EFORKED ? 0 : 1);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "a child's close of the shared generator was not refused with IDM_EFORKED");
        CHECK(file_mark(path) == mark, "a child's refused close moved the mark");
        IDM_ASSERT_OK(idm_snowflake_next(g, &id));
        CHECK(id > max, "after a child's refused close the generator minted %llu, not above %llu",
              ULL(id), ULL(max));
        max = id;
        max_ms = id_ms(l, max);
    }
    IDM_ASSERT_OK(idm_snowflake_close(g));
    mark = file_mark(path);
    CHECK(mark == max_ms, "the close stored %lld, not the highest id's tick %lld", LL(mark),
          LL(max_ms));

    /* A restart must find the file: no fresh start. */
    o.state_fresh = false;
    memset(mem, 0xA5, size);
    IDM_ASSERT_OK(idm_snowflake_open_shared(&g, mem, size, &o));
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    CHECK(id > max && id_ms(l, id) > mark, "reopened shared, the generator minted %llu (%lld "
                                           "ms), not above %llu (mark %lld)",
          ULL(id), LL(id_ms(l, id)), ULL(max), LL(mark));
    max = id;
    IDM_ASSERT_OK(idm_snowflake_close(g));
    mark = file_mark(path);
    CHECK(mark == id_ms(l, max), "the second close stored %lld, not %lld", LL(mark),
          LL(id_ms(l, max)));

    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    CHECK(id > max && id_ms(l, id) > mark, "reopened private, the generator minted %llu, not "
                                           "above %llu (mark %lld)",
          ULL(id), ULL(max), LL(mark));
    IDM_ASSERT_OK(idm_snowflake_close(g));

    shm_free(rep, KIDS * sizeof *rep);
    shm_free(mem, size);
    idm_layout_free(l);
    idm_test_rmtree(dir);
    free(path);
    free(dir);
}

/* ---- 4. bad memory ---- */

/* NULL, misaligned and short memory (and no place for the generator) are
 * IDM_EINVAL with a detail, and leave nothing: no state file (the directory
 * stays empty), the memory and *out untouched. The same memory then works. */
static void snowflake_shared_bad_memory(void **state)
{
    char *dir = idm_test_tmpdir(), *path = idm_test_path(dir, "gen.state"), names[256];
    idm_layout *l = twitter();
    idm_snowflake_opts o;
    idm_snowflake *const sentinel = (idm_snowflake *)(uintptr_t)0x5A5A;
    idm_snowflake *g;
    size_t size = idm_snowflake_shared_size();
    uint8_t *mem = shm_new(size + 64);
    const struct {
        const char *why;
        void *mem;
        size_t size;
        bool no_out;
    } cases[] = {
        {"NULL memory", NULL, size, false},
        {"memory 8 bytes past a 64-byte boundary", mem + 8, size, false},
        {"memory one byte short", mem, size - 1, false},
        {"no memory at all (size 0)", mem, 0, false},
        {"no place for the generator (out NULL)", mem, size, true},
    };
    (void)state;

    sf_opts(&o, l, NODE_WORKER, path);
    memset(mem, 0x5A, size + 64);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc;
        g = sentinel;
        rc = idm_snowflake_open_shared(cases[i].no_out ? NULL : &g, cases[i].mem, cases[i].size,
                                       &o);
        CHECK(rc == IDM_EINVAL, "%s: idm_snowflake_open_shared returned %s, expected IDM_EINVAL",
              cases[i].why, idm_err_name(rc));
        CHECK(idm_error_detail()[0] != '\0', "%s: no error detail", cases[i].why);
        CHECK(g == sentinel, "%s: *out was written", cases[i].why);
        CHECK(idm_test_all_bytes_are(mem, size + 64, 0x5A), "%s: the memory was written",
              cases[i].why);
        list_dir(dir, names, sizeof names);
        CHECK(names[0] == '\0', "%s: files were made in the state directory: %s", cases[i].why,
              names);
    }

    IDM_ASSERT_OK(idm_snowflake_open_shared(&g, mem, size, &o));
    IDM_ASSERT_OK(idm_snowflake_close(g));
    list_dir(dir, names, sizeof names);
    assert_string_equal(names, "gen.state gen.state.lock");

    shm_free(mem, size + 64);
    idm_layout_free(l);
    idm_test_rmtree(dir);
    free(path);
    free(dir);
}

/* ---- 5. the state file's paths live in the shared memory ---- */

typedef struct cross_run {
    idm_snowflake *g; /* NULL for the child forked before the open: sent down the pipe */
    kid_report *rep;
    kid_link *link;
    const char *cwd; /* where the child works */
} cross_run;

/* Mints single ids until one is CROSS_MS past the first: with a lookahead
 * of one tick, every tick or two past the mark is a rewrite of the state
 * file by this process. Reports the counters before and after. */
static int cross_marks(idm_snowflake *g, kid_report *r)
{
    const idm_layout *l = idm_snowflake_layout(g); /* the copy in shared memory */
    idm_snowflake_stats st;
    idm_decoded d;
    uint64_t id;
    int rc;
    idm_snowflake_stats_get(g, &st);
    r->writes_before = st.state_writes;
    do {
        rc = idm_snowflake_next(g, &id);
        if (rc != 0)
            return kid_fail(r, rc, "idm_snowflake_next");
        rc = idm_layout_decode(l, id, &d);
        if (rc != 0)
            return kid_fail(r, rc, "idm_layout_decode on the shared generator's layout");
        if (r->n++ == 0)
            r->first_ms = d.unix_ms;
    } while (d.unix_ms < r->first_ms + CROSS_MS);
    r->last_ms = d.unix_ms;
    idm_snowflake_stats_get(g, &st);
    r->writes_after = st.state_writes;
    r->mark_after = st.state_mark_ms;
    r->state_error = st.state_error;
    return 0;
}

static int kid_cross(void *arg, int k)
{
    cross_run *a = arg;
    idm_snowflake *g = a->g;
    (void)k;
    close(a->link->down[1]);
    if (chdir(a->cwd) != 0) {
        snprintf(a->rep->what, sizeof a->rep->what, "chdir %s: %s", a->cwd, strerror(errno));
        return 2;
    }
    if (g == NULL && idm_test_read_all(a->link->down[0], &g, sizeof g) != sizeof g) {
        snprintf(a->rep->what, sizeof a->rep->what, "the parent sent no generator");
        return 2;
    }
    return cross_marks(g, a->rep);
}

/* The parent's checks after a child crossed marks: it minted, its writes
 * were counted, and the state file (the link's target) holds a mark at or
 * past its ids, above the one before it ran. Returns that mark. */
static idm_unix_ms check_crossed(const char *who, const kid_report *r, const char *real,
                                 idm_unix_ms mark_before)
{
    idm_unix_ms mark = file_mark(real);
    CHECK(r->rc == 0, "%s: %s", who, r->what);
    CHECK(r->writes_after >= r->writes_before + 2,
          "%s: state_writes went from %llu to %llu while it minted %zu ids over %lld ms with a "
          "lookahead of one tick",
          who, ULL(r->writes_before), ULL(r->writes_after), r->n, LL(r->last_ms - r->first_ms));
    CHECK(r->state_error == 0, "%s: state_error %s", who, idm_err_name(r->state_error));
    CHECK(mark >= r->last_ms && mark > mark_before,
          "%s: the state file's mark %lld (before: %lld) does not cover its last id at %lld ms",
          who, LL(mark), LL(mark_before), LL(r->last_ms));
    CHECK(mark == r->mark_after, "%s: the file holds %lld, the counters said %lld", who, LL(mark),
          LL(r->mark_after));
    return mark;
}

/* Opened through a relative path to a symbolic link, the string passed then
 * overwritten with another valid name: a child forked before the open
 * (nothing of the generator in its heap) and one forked after it, both
 * working in another directory, each cross the mark many times, i.e.
 * rewrite the link's target; nothing is written under the overwritten
 * name, the link or the other directory. */
static void snowflake_shared_paths_kept_in_memory(void **state)
{
    char *dir = idm_test_tmpdir(), *away = idm_test_tmpdir(), names[256], cwd[4096];
    char *link = idm_test_path(dir, "link.state"), *real = idm_test_path(dir, "real.state");
    char *arg = strdup("link.state");
    idm_layout *l = twitter();
    idm_snowflake_opts o;
    idm_snowflake *g = NULL;
    size_t size = idm_snowflake_shared_size();
    void *mem = shm_new(size);
    kid_report *rep = shm_new(2 * sizeof *rep);
    kid_link early, late;
    cross_run ea = {NULL, &rep[0], &early, away}, la = {NULL, &rep[1], &late, away};
    struct stat sb;
    uint64_t id;
    idm_unix_ms mark;
    (void)state;

    assert_non_null(arg);
    assert_non_null(getcwd(cwd, sizeof cwd));
    CHECK(symlink("real.state", link) == 0, "symlink %s: %s", link, strerror(errno));

    /* Forked before the generator exists; it waits for its address. */
    link_open(&early);
    early.pid = spawn(kid_cross, &ea, 0);
    link_parent_side(&early);

    assert_int_equal(chdir(dir), 0);
    sf_opts(&o, l, NODE_WORKER, arg);
    o.state_lookahead_ms = 1; /* one tick */
    IDM_ASSERT_OK(idm_snowflake_open_shared(&g, mem, size, &o));
    assert_int_equal(chdir(away), 0);
    memcpy(arg, "evil.state", sizeof "evil.state");
    check_layout_inside(g, mem, size);
    mark = file_mark(real);

    assert_int_equal(idm_test_write_all(early.down[1], &g, sizeof g), 0);
    reap(early.pid, 0, &rep[0]);
    link_close(&early);
    mark = check_crossed("the child forked before the open", &rep[0], real, mark);

    la.g = g;
    link_open(&late);
    late.pid = spawn(kid_cross, &la, 1);
    link_parent_side(&late);
    reap(late.pid, 1, &rep[1]);
    link_close(&late);
    check_crossed("the child forked after the open", &rep[1], real, mark);

    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    IDM_ASSERT_OK(idm_snowflake_close(g));
    CHECK(file_mark(real) == id_ms(l, id), "the close stored %lld, not the last id's tick %lld",
          LL(file_mark(real)), LL(id_ms(l, id)));
    assert_int_equal(chdir(cwd), 0);

    CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode), "%s is no longer a symbolic link", link);
    list_dir(dir, names, sizeof names);
    assert_string_equal(names, "link.state real.state real.state.lock");
    list_dir(away, names, sizeof names);
    CHECK(names[0] == '\0', "files appeared in the children's working directory: %s", names);

    shm_free(rep, 2 * sizeof *rep);
    shm_free(mem, size);
    idm_layout_free(l);
    idm_test_rmtree(dir);
    idm_test_rmtree(away);
    free(arg);
    free(link);
    free(real);
    free(dir);
    free(away);
}

/* ---- 6. UUIDv7 and ULID ---- */

/* One kind of 128-bit generator, behind a common face. */
typedef struct kind128 {
    const char *name;      /* the minting call, for messages */
    const char *init_name; /* the shared initialiser */
    size_t (*size)(void);
    int (*init)(void **out, void *mem, size_t size, const idm_clock *clock, const idm_rng *rng);
    int (*next)(void *gen, uint8_t out[16]);
    bool step_one; /* each id the previous plus 1 (ULID's monotonic mode) */
} kind128;

static int uuid7_init(void **out, void *mem, size_t size, const idm_clock *clock,
                      const idm_rng *rng)
{
    idm_uuid7_gen *g = NULL;
    int rc = idm_uuid7_gen_init_shared(&g, mem, size, clock, rng);
    *out = g;
    return rc;
}

static int uuid7_next16(void *gen, uint8_t out[16])
{
    idm_uuid u;
    int rc = idm_uuid7_next(gen, &u);
    memcpy(out, u.b, 16);
    return rc;
}

static int ulid_init(void **out, void *mem, size_t size, const idm_clock *clock,
                     const idm_rng *rng)
{
    idm_ulid_gen *g = NULL;
    int rc = idm_ulid_gen_init_shared(&g, mem, size, clock, rng, true);
    *out = g;
    return rc;
}

static int ulid_next16(void *gen, uint8_t out[16])
{
    idm_ulid u;
    int rc = idm_ulid_next(gen, &u);
    memcpy(out, u.b, 16);
    return rc;
}

static const kind128 UUID7 = {"idm_uuid7_next", "idm_uuid7_gen_init_shared",
                              idm_uuid7_gen_shared_size, uuid7_init, uuid7_next16, false};
static const kind128 ULID = {"idm_ulid_next", "idm_ulid_gen_init_shared",
                             idm_ulid_gen_shared_size, ulid_init, ulid_next16, true};

typedef struct run128 {
    const kind128 *kind;
    void *gen;
    uint8_t *ids;
    kid_report *rep;
    const idm_test_script_rng *script; /* NULL: the system rng */
} run128;

static int kid_128(void *arg, int k)
{
    run128 *a = arg;
    kid_report *r = &a->rep[k];
    uint8_t *ids = a->ids + (size_t)k * PER_KID_128 * 16;
    for (; r->n < PER_KID_128; r->n++) {
        int rc = a->kind->next(a->gen, ids + r->n * 16);
        if (rc != 0)
            return kid_fail(r, rc, a->kind->name);
    }
    r->vec_pending = a->script != NULL ? a->script->vec_pending : -1;
    return 0;
}

static void hex16(const uint8_t *b, char out[33])
{
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* b + 1, as a 128-bit big-endian number, into out. */
static void plus_one(const uint8_t *b, uint8_t out[16])
{
    int i = 15;
    memcpy(out, b, 16);
    while (i >= 0 && ++out[i] == 0)
        i--;
}

/*
 * A shared generator of kind on a clock frozen at T_FROZEN, rng the script
 * (or the system's if NULL). The parent takes one id P first; four children
 * take PER_KID_128 each; the parent takes one more, Q. Each child's ids
 * increase and lie above P, all carry T_FROZEN, none repeats, Q is above
 * them all; for ULID, P to Q are consecutive numbers. With the script, P's
 * random bits are 0x80 then zeros and a vector of zeros waits for the next
 * fresh draw: a generator reset in a child would start at zero, below P,
 * and would have taken the vector.
 */
static void shared128(const kind128 *kind, idm_test_script_rng *script)
{
    static const uint8_t high[10] = {0x80}, zeros[10] = {0};
    idm_manual_clock *mc = idm_test_frozen_clock(T_FROZEN);
    size_t size = kind->size(), all_n = KIDS * (size_t)PER_KID_128 + 2, ids_bytes;
    void *mem = shm_new(size);
    run128 a = {kind, NULL, NULL, shm_new(KIDS * sizeof(kid_report)), script};
    uint8_t p[16], q[16], *all;
    char hp[33], hc[33];
    pid_t pids[KIDS];

    ids_bytes = KIDS * (size_t)PER_KID_128 * 16;
    a.ids = shm_new(ids_bytes);
    IDM_ASSERT_OK(kind->init(&a.gen, mem, size, idm_manual_clock_clock(mc),
                             script != NULL ? &script->iface : NULL));
    CHECK(a.gen != NULL && (uint8_t *)a.gen >= (uint8_t *)mem &&
              (uint8_t *)a.gen < (uint8_t *)mem + size,
          "%s: the shared generator is not in its memory", kind->init_name);
    if (script != NULL)
        idm_test_script_vector(script, high, 10);
    IDM_ASSERT_OK(kind->next(a.gen, p));
    if (script != NULL) {
        CHECK(!script->vec_pending, "%s: the parent's first id drew no fresh bits", kind->name);
        idm_test_script_vector(script, zeros, 10);
    }

    for (int k = 0; k < KIDS; k++)
        pids[k] = spawn(kid_128, &a, k);
    for (int k = 0; k < KIDS; k++)
        reap(pids[k], k, &a.rep[k]);
    IDM_ASSERT_OK(kind->next(a.gen, q));

    all = malloc(all_n * 16);
    assert_non_null(all);
    memcpy(all, p, 16);
    memcpy(all + 16, q, 16);
    memcpy(all + 32, a.ids, ids_bytes);
    hex16(p, hp);
    for (int k = 0; k < KIDS; k++) {
        const uint8_t *ids = a.ids + (size_t)k * PER_KID_128 * 16;
        CHECK(a.rep[k].n == PER_KID_128, "%s: child %d took %zu ids", kind->name, k, a.rep[k].n);
        hex16(ids, hc);
        CHECK(memcmp(p, ids, 16) < 0, "%s: child %d's first id %s is not above the parent's %s "
                                      "taken before the fork: the generator was reset in the "
                                      "child",
              kind->name, k, hc, hp);
        CHECK(script == NULL || a.rep[k].vec_pending == 1,
              "%s: child %d drew fresh random bits on a frozen clock: it started a sequence of "
              "its own", kind->name, k);
        for (size_t i = 0; i < PER_KID_128; i++) {
            CHECK(idm_test_be48(ids + i * 16) == T_FROZEN, "%s: child %d: id %zu is at %lld ms, "
                                                           "not the frozen %lld",
                  kind->name, k, i, LL(idm_test_be48(ids + i * 16)), LL(T_FROZEN));
            CHECK(i == 0 || memcmp(ids + (i - 1) * 16, ids + i * 16, 16) < 0,
                  "%s: child %d: id %zu is not above id %zu", kind->name, k, i, i - 1);
            CHECK(memcmp(ids + i * 16, q, 16) < 0, "%s: the parent's id after the children is "
                                                   "not above child %d's id %zu",
                  kind->name, k, i);
        }
    }
    size_t dups = idm_test_count_dup16(all, all_n); /* sorts */
    CHECK(dups == 0, "%s: %zu ids were taken twice", kind->name, dups);
    if (kind->step_one) {
        for (size_t i = 1; i < all_n; i++) {
            uint8_t want[16];
            plus_one(all + (i - 1) * 16, want);
            if (memcmp(all + i * 16, want, 16) != 0) {
                hex16(all + (i - 1) * 16, hp);
                hex16(all + i * 16, hc);
                fail_msg("%s: the ids are not one sequence: %s is followed by %s", kind->name, hp,
                         hc);
            }
        }
    }

    free(all);
    shm_free(a.ids, ids_bytes);
    shm_free(a.rep, KIDS * sizeof(kid_report));
    shm_free(mem, size);
    idm_manual_clock_free(mc);
}

static void uuid7_shared_four_children(void **state)
{
    (void)state;
    shared128(&UUID7, NULL);
}

static void uuid7_shared_not_reset_in_child(void **state)
{
    idm_test_script_rng s;
    (void)state;
    idm_test_script_init(&s);
    shared128(&UUID7, &s);
    idm_test_script_done(&s);
}

static void ulid_shared_four_children(void **state)
{
    (void)state;
    shared128(&ULID, NULL);
}

static void ulid_shared_not_reset_in_child(void **state)
{
    idm_test_script_rng s;
    (void)state;
    idm_test_script_init(&s);
    shared128(&ULID, &s);
    idm_test_script_done(&s);
}

/* NULL, misaligned (4 past an 8-byte boundary) and short memory, and no
 * place for the generator: IDM_EINVAL with a detail, memory and *out
 * untouched. */
static void ids128_shared_bad_memory(void **state)
{
    static const kind128 *const kinds[] = {&UUID7, &ULID};
    (void)state;
    for (size_t k = 0; k < 2; k++) {
        size_t size = kinds[k]->size();
        uint8_t *mem = shm_new(size + 8);
        const struct {
            const char *why;
            void *mem;
            size_t size;
            bool no_out;
        } cases[] = {
            {"NULL memory", NULL, size, false},
            {"memory 4 bytes past an 8-byte boundary", mem + 4, size, false},
            {"memory one byte short", mem, size - 1, false},
            {"no place for the generator (out NULL)", mem, size, true},
        };
        memset(mem, 0x5A, size + 8);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            void *const sentinel = (void *)(uintptr_t)0x5A5A;
            idm_uuid7_gen *u = sentinel;
            idm_ulid_gen *g = sentinel;
            int rc = k == 0 ? idm_uuid7_gen_init_shared(cases[i].no_out ? NULL : &u, cases[i].mem,
                                                        cases[i].size, NULL, NULL)
                            : idm_ulid_gen_init_shared(cases[i].no_out ? NULL : &g, cases[i].mem,
                                                       cases[i].size, NULL, NULL, true);
            CHECK(rc == IDM_EINVAL, "%s, %s: returned %s, expected IDM_EINVAL",
                  kinds[k]->init_name, cases[i].why, idm_err_name(rc));
            CHECK(idm_error_detail()[0] != '\0', "%s, %s: no error detail", kinds[k]->init_name,
                  cases[i].why);
            CHECK(u == sentinel && g == sentinel, "%s, %s: *out was written",
                  kinds[k]->init_name, cases[i].why);
            CHECK(idm_test_all_bytes_are(mem, size + 8, 0x5A), "%s, %s: the memory was written",
                  kinds[k]->init_name, cases[i].why);
        }
        shm_free(mem, size + 8);
    }
}

int main(void)
{
#define T(f) cmocka_unit_test_teardown(f, cleanup)
    const struct CMUnitTest tests[] = {
        T(snowflake_shared_four_children),
        T(snowflake_shared_guard_across_processes),
        T(snowflake_shared_close_exact_mark_reopen),
        T(snowflake_shared_bad_memory),
        T(snowflake_shared_paths_kept_in_memory),
        T(uuid7_shared_four_children),
        T(uuid7_shared_not_reset_in_child),
        T(ulid_shared_four_children),
        T(ulid_shared_not_reset_in_child),
        T(ids128_shared_bad_memory),
    };
#undef T
    if (getcwd(start_cwd, sizeof start_cwd) == NULL) {
        perror("getcwd");
        return 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
