/* SPDX-License-Identifier: MIT */
/*
 * idm_bench128: the cost of idmint's 128-bit ids (and ObjectIds), one
 * thread, in ns per id, each next to a ratio against a floor or a peer
 * measured in the same round.
 *
 *   F1  one bare clock_gettime(CLOCK_REALTIME): any time-based id reads it
 *   F2  idm_random_bytes, 16 bytes: the random part of an id
 *   F3  getrandom(2), 16 bytes: a system call per id, what F2's buffer saves
 *   F4  the floor of a UUIDv7 generator, inline: a clock read, 4 random
 *       bytes (the increment) and a lock around the state
 *   6   idm_uuid7_next, one generator, system clock and rng
 *   7   idm_uuid4(NULL, ...)
 *   8   idm_ulid_next, monotonic generator (binary)
 *   9   idm_ulid_next + idm_ulid_format (text)
 *   10  idm_uuid7_next + idm_uuid_format (text)
 *   11  idm_objectid_next
 *   12  idm_uuid4 + idm_uuid_format (text)
 *   P6  libuuid uuid_generate_random
 *   P7  libuuid uuid_generate_time (version 1)
 *   P8  libuuid uuid_generate_time_v7, where the installed libuuid has it
 *
 * Rounds and medians as in idm_bench: IDM_BENCH_ROUNDS rounds (default 3),
 * each measurement IDM_BENCH_SECONDS of wall time (default 1; the floors half
 * of it), the table giving the median figure, the median of the per-round
 * ratios and the range of the figure.
 *
 * Every timed loop mints CHUNK ids into an array between two reads of the
 * monotonic clock; only that stretch is timed. Between chunks, untimed, each
 * id of the chunk is checked: version and variant bits; ids of one UUIDv7 or
 * ULID generator strictly increase across chunks, rounds and the warm-up,
 * by a random step of 1 to 2^32 (UUIDv7) or exactly 1 (ULID) within one
 * millisecond; the timestamp lies between wall-clock reads taken just before
 * and after the chunk; ObjectIds keep their process value and count up by
 * one; text equals an encoding of the binary id written here; and the first
 * WINDOW ids of every timed run hold no duplicate. A failed check prints
 * WRONG and makes the exit status 2.
 *
 * Usage: idm_bench128 [--ref-out FILE]   (FILE gets figures for the Node.js
 * peers' ratio columns).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include <idmint/idmint.h>

#include "bench128_config.h" /* IDM_BENCH_LIBUUID*, from the build */
#if IDM_BENCH_LIBUUID
#include <uuid/uuid.h>
#endif

#include "bench_util.h"

#define CHUNK 256      /* ids minted between two reads of the clock */
#define WINDOW 65536   /* ids of each timed run checked for duplicates */
#define TEXT_LEN 40
#define WARMUP_NS INT64_C(50000000)

/* One id as the loops store it. */
typedef union slot {
    uint8_t b[16];
    idm_uuid u;
    idm_ulid l;
    idm_objectid o;
} slot;

/* ------------------------------------------------------------- encodings */

static uint64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static int64_t be48(const uint8_t *p)
{
    int64_t v = 0;
    for (int i = 0; i < 6; i++)
        v = v << 8 | p[i];
    return v;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

/* The canonical UUID text, written independently of the library. */
static void ref_uuid_text(const uint8_t b[16], char out[37])
{
    static const char hex[] = "0123456789abcdef";
    int k = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[k++] = '-';
        out[k++] = hex[b[i] >> 4];
        out[k++] = hex[b[i] & 15];
    }
    out[k] = '\0';
}

/* The ULID text: 128 bits as 26 digits of Crockford's base32. */
static void ref_ulid_text(const uint8_t b[16], char out[27])
{
    static const char alpha[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    uint64_t hi = be64(b), lo = be64(b + 8);
    for (int i = 25; i >= 0; i--) {
        out[i] = alpha[lo & 31];
        lo = lo >> 5 | hi << 59;
        hi >>= 5;
    }
    out[26] = '\0';
}

static void hex_text(const uint8_t *b, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[2 * n] = '\0';
}

/* ---------------------------------------------------------------- checks */

enum kind {
    K_RANDOM,   /* 16 random bytes: duplicates only */
    K_UUID7,    /* idmint UUIDv7, one generator */
    K_UUID4,    /* UUIDv4 (idmint or libuuid) */
    K_ULID,     /* idmint ULID, one monotonic generator */
    K_OID,      /* idmint ObjectId, one generator */
    K_UUID1,    /* libuuid's time-based UUIDs */
    K_PEER7     /* libuuid's UUIDv7: order is noted, not required */
};

enum text_kind { T_NONE, T_UUID, T_ULID };

/* What a generator's ids must satisfy; lives as long as the generator, so
 * order is checked across chunks, the warm-up and rounds. */
typedef struct checker {
    enum kind kind;
    enum text_kind text;
    bool started;
    uint8_t prev[16];
    uint64_t bad_bits, bad_order, bad_step, bad_time, bad_text, bad_oid;
    uint64_t peer_not_increasing;
    char first_problem[160];
} checker;

typedef struct run128 {
    uint64_t count;      /* ids minted */
    uint64_t errors;     /* calls that failed */
    int last_error;
    int64_t ns;          /* timed ns: the chunks only */
    bool record;         /* keep the first WINDOW ids */
    size_t nwin;
    bool clock_moved;    /* CLOCK_REALTIME stepped against CLOCK_MONOTONIC */
    int64_t offset0;     /* wall - mono at the start of the run */
    bool have_offset;
} run128;

static slot g_win[WINDOW];

static void problem(checker *ck, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void problem(checker *ck, const char *fmt, ...)
{
    if (ck->first_problem[0] != '\0')
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ck->first_problem, sizeof ck->first_problem, fmt, ap);
    va_end(ap);
}

static bool rfc_variant(const uint8_t *b)
{
    return (b[8] & 0xc0) == 0x80;
}

/* UUIDv7: rand_a (12 bits) and rand_b (62 bits) read as one 74-bit number;
 * true if next - prev lies in [1, 2^32]. */
static bool uuid7_step_ok(const uint8_t *prev, const uint8_t *next)
{
    uint64_t ra0 = (uint64_t)(prev[6] & 0x0f) << 8 | prev[7];
    uint64_t ra1 = (uint64_t)(next[6] & 0x0f) << 8 | next[7];
    uint64_t mask = (UINT64_C(1) << 62) - 1;
    uint64_t rb0 = be64(prev + 8) & mask, rb1 = be64(next + 8) & mask;
    uint64_t step;
    if (ra1 == ra0) {
        if (rb1 <= rb0)
            return false;
        step = rb1 - rb0;
    } else if (ra1 == ra0 + 1) {
        step = (mask - rb0) + 1 + rb1; /* fits: at most 2^63 */
    } else {
        return false;
    }
    return step >= 1 && step <= (UINT64_C(1) << 32);
}

/* ULID: the 80-bit random part of next is that of prev plus one. */
static bool ulid_step_ok(const uint8_t *prev, const uint8_t *next)
{
    uint8_t want[10];
    memcpy(want, prev + 6, 10);
    int i = 9;
    while (i >= 0 && ++want[i] == 0)
        i--;
    return i >= 0 && memcmp(want, next + 6, 10) == 0;
}

static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/*
 * Check one chunk: ids[0..CHUNK-1] except the indices in errs, minted
 * between the wall-clock reads w_a and w_b (ns); txt holds their text if the
 * measurement formats.
 */
static void check_chunk(checker *ck, const slot *ids, char (*txt)[TEXT_LEN],
                        const int *errs, int nerr, int64_t w_a, int64_t w_b,
                        int64_t m_a, int64_t m_b, run128 *r)
{
    /* Did the wall clock step against the monotonic one? (NTP slews are
     * well under 1 ms over a run.) */
    int64_t off_a = w_a - m_a, off_b = w_b - m_b;
    if (!r->have_offset) {
        r->offset0 = off_a;
        r->have_offset = true;
    }
    if (llabs(off_a - r->offset0) > 1000000 || llabs(off_b - r->offset0) > 1000000)
        r->clock_moved = true;
    int64_t ms_a = floordiv(w_a, 1000000), ms_b = floordiv(w_b, 1000000);
    int e = 0;
    for (int i = 0; i < CHUNK; i++) {
        if (e < nerr && errs[e] == i) {
            e++;
            continue;
        }
        const uint8_t *b = ids[i].b;
        int64_t ms;
        switch (ck->kind) {
        case K_RANDOM:
            break;
        case K_UUID4:
            if ((b[6] >> 4) != 4 || !rfc_variant(b)) {
                ck->bad_bits++;
                problem(ck, "version %d, variant bits %d%d, want 4 and 10",
                        b[6] >> 4, b[8] >> 7, (b[8] >> 6) & 1);
            }
            break;
        case K_UUID1:
            if ((b[6] >> 4) != 1 || !rfc_variant(b)) {
                ck->bad_bits++;
                problem(ck, "version %d, want 1 and variant 10", b[6] >> 4);
            }
            break;
        case K_UUID7:
        case K_PEER7:
            if ((b[6] >> 4) != 7 || !rfc_variant(b)) {
                ck->bad_bits++;
                problem(ck, "version %d, variant bits %d%d, want 7 and 10",
                        b[6] >> 4, b[8] >> 7, (b[8] >> 6) & 1);
            }
            /* fall through */
        case K_ULID:
            if (ck->started && memcmp(b, ck->prev, 16) <= 0) {
                if (ck->kind == K_PEER7) {
                    ck->peer_not_increasing++;
                } else {
                    ck->bad_order++;
                    problem(ck, "an id is not above the one before it");
                }
            } else if (ck->started && ck->kind != K_PEER7 &&
                       be48(b) == be48(ck->prev) &&
                       !(ck->kind == K_UUID7 ? uuid7_step_ok(ck->prev, b)
                                             : ulid_step_ok(ck->prev, b))) {
                ck->bad_step++;
                problem(ck, "within one ms the step is not %s",
                        ck->kind == K_UUID7 ? "1 to 2^32" : "+1");
            }
            ms = be48(b);
            if (ck->kind != K_PEER7 && (ms < ms_a || ms > ms_b)) {
                ck->bad_time++;
                problem(ck, "time %" PRId64 " ms outside the chunk's "
                        "[%" PRId64 ", %" PRId64 "]", ms, ms_a, ms_b);
            }
            break;
        case K_OID: {
            int64_t s = (int64_t)be32(b);
            if (s < floordiv(w_a, 1000000000) || s > floordiv(w_b, 1000000000)) {
                ck->bad_time++;
                problem(ck, "seconds %" PRId64 " outside the chunk's", s);
            }
            if (ck->started) {
                uint32_t c0 = be32(ck->prev + 8) & 0xffffff;
                uint32_t c1 = be32(b + 8) & 0xffffff;
                if (memcmp(b + 4, ck->prev + 4, 5) != 0) {
                    ck->bad_oid++;
                    problem(ck, "the process value changed");
                } else if (c1 != ((c0 + 1) & 0xffffff)) {
                    ck->bad_oid++;
                    problem(ck, "counter %06" PRIx32 " after %06" PRIx32, c1,
                            c0);
                }
            }
            break;
        }
        }
        if (ck->text != T_NONE) {
            char want[TEXT_LEN];
            if (ck->text == T_UUID)
                ref_uuid_text(b, want);
            else
                ref_ulid_text(b, want);
            if (strcmp(want, txt[i]) != 0) {
                ck->bad_text++;
                problem(ck, "text %.36s, want %s", txt[i], want);
            }
        }
        memcpy(ck->prev, b, 16);
        ck->started = true;
        if (r->record && r->nwin < WINDOW)
            g_win[r->nwin++] = ids[i];
    }
}

static int cmp_slot(const void *a, const void *b)
{
    return memcmp(a, b, 16);
}

/* Report what the checker saw during one run, then clear its counts. Time
 * problems after a step of the wall clock are only noted. */
static void report_run(checker *ck, const char *what, run128 *r)
{
    if (r->count == 0)
        bench_wrong("%s: no id minted (last error %s)", what,
                    idm_err_name(r->last_error));
    if (r->errors != 0)
        bench_printf("note: %s: %" PRIu64 " calls failed, last with %s (%d)\n",
                     what, r->errors, idm_err_name(r->last_error),
                     r->last_error);
    uint64_t time_hard = r->clock_moved ? 0 : ck->bad_time;
    uint64_t hard = ck->bad_bits + ck->bad_order + ck->bad_step + ck->bad_text +
                    ck->bad_oid + time_hard;
    if (hard != 0) {
        char what_wrong[256] = "";
        size_t len = 0;
        const struct {
            const char *name;
            uint64_t n;
        } parts[] = {{"version/variant", ck->bad_bits},
                     {"not above the one before", ck->bad_order},
                     {"wrong step within a ms", ck->bad_step},
                     {"time outside its chunk", time_hard},
                     {"text", ck->bad_text},
                     {"process value or counter", ck->bad_oid}};
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
            if (parts[i].n != 0 && len < sizeof what_wrong)
                len += (size_t)snprintf(what_wrong + len, sizeof what_wrong - len,
                                        "%s%s %" PRIu64, len ? ", " : "",
                                        parts[i].name, parts[i].n);
        bench_wrong("%s: ids wrong: %s; first: %s", what, what_wrong,
                    ck->first_problem);
    } else if (ck->bad_time != 0) {
        bench_printf("note: %s: the wall clock stepped during the run; %" PRIu64
                     " ids carry a time outside their chunk (%s)\n", what,
                     ck->bad_time, ck->first_problem);
    }
    if (ck->peer_not_increasing != 0)
        bench_printf("note: %s: %" PRIu64 " ids not above the one before\n",
                     what, ck->peer_not_increasing);
    if (r->record && r->nwin > 1) {
        qsort(g_win, r->nwin, sizeof g_win[0], cmp_slot);
        uint64_t dups = 0;
        for (size_t i = 1; i < r->nwin; i++)
            if (memcmp(g_win[i].b, g_win[i - 1].b, 16) == 0)
                dups++;
        if (dups != 0)
            bench_wrong("%s: %" PRIu64 " duplicates among %zu ids", what, dups,
                        r->nwin);
    }
    ck->bad_bits = ck->bad_order = ck->bad_step = ck->bad_time = 0;
    ck->bad_text = ck->bad_oid = ck->peer_not_increasing = 0;
    ck->first_problem[0] = '\0';
}

/* ------------------------------------------------------------ the loops */

typedef void (*loop_fn)(void *gen, checker *ck, int64_t deadline, run128 *r);

/*
 * One loop per kind of call, so every call in the timed stretch is direct.
 * CALL mints ids[i] and yields 0 or an error code; TEXT formats ids[i] into
 * txt[i] (or does nothing).
 */
#define DEFINE_LOOP(NAME, GEN_T, CALL, TEXT)                                   \
    static void NAME(void *gen, checker *ck, int64_t deadline, run128 *r)      \
    {                                                                          \
        static slot ids[CHUNK];                                                \
        static char txt[CHUNK][TEXT_LEN];                                      \
        GEN_T *g = gen;                                                        \
        (void)g;                                                               \
        for (;;) {                                                             \
            int errs[CHUNK] = {0};                                             \
            int nerr = 0;                                                      \
            int64_t w_a = bench_wall_ns();                                     \
            int64_t t_a = bench_mono_ns();                                     \
            for (int i = 0; i < CHUNK; i++) {                                  \
                int rc = (CALL);                                               \
                if (rc != 0) {                                                 \
                    errs[nerr++] = i;                                          \
                    r->last_error = rc;                                        \
                    continue;                                                  \
                }                                                              \
                TEXT;                                                          \
            }                                                                  \
            int64_t t_b = bench_mono_ns();                                     \
            int64_t w_b = bench_wall_ns();                                     \
            r->ns += t_b - t_a;                                                \
            r->count += (uint64_t)(CHUNK - nerr);                              \
            r->errors += (uint64_t)nerr;                                       \
            check_chunk(ck, ids, txt, errs, nerr, w_a, w_b, t_a, t_b, r);      \
            if (t_b >= deadline)                                               \
                break;                                                         \
        }                                                                      \
    }

#define NO_TEXT ((void)0)

static int getrandom16(uint8_t *b)
{
    return getrandom(b, 16, 0) == 16 ? 0 : IDM_ERANDOM;
}

DEFINE_LOOP(loop_random_bytes, void, idm_random_bytes(ids[i].b, 16), NO_TEXT)
DEFINE_LOOP(loop_getrandom, void, getrandom16(ids[i].b), NO_TEXT)
DEFINE_LOOP(loop_uuid7, idm_uuid7_gen, idm_uuid7_next(g, &ids[i].u), NO_TEXT)
DEFINE_LOOP(loop_uuid7_text, idm_uuid7_gen, idm_uuid7_next(g, &ids[i].u),
            idm_uuid_format(&ids[i].u, txt[i]))
DEFINE_LOOP(loop_uuid4, void, idm_uuid4(NULL, &ids[i].u), NO_TEXT)
DEFINE_LOOP(loop_uuid4_text, void, idm_uuid4(NULL, &ids[i].u),
            idm_uuid_format(&ids[i].u, txt[i]))
DEFINE_LOOP(loop_ulid, idm_ulid_gen, idm_ulid_next(g, &ids[i].l), NO_TEXT)
DEFINE_LOOP(loop_ulid_text, idm_ulid_gen, idm_ulid_next(g, &ids[i].l),
            idm_ulid_format(&ids[i].l, txt[i]))
DEFINE_LOOP(loop_objectid, idm_objectid_gen, idm_objectid_next(g, &ids[i].o),
            NO_TEXT)
#if IDM_BENCH_LIBUUID
DEFINE_LOOP(loop_lu_random, void, (uuid_generate_random(ids[i].b), 0), NO_TEXT)
DEFINE_LOOP(loop_lu_time, void, (uuid_generate_time(ids[i].b), 0), NO_TEXT)
#if IDM_BENCH_LIBUUID_V7
DEFINE_LOOP(loop_lu_v7, void, (uuid_generate_time_v7(ids[i].b), 0), NO_TEXT)
#endif
#endif

/* Warm up for 50 ms, then time secs of wall time; returns ns per id. text:
 * what the loop formats, for the check. */
static double measure(const char *what, loop_fn loop, void *gen, checker *ck,
                      enum text_kind text, double secs)
{
    run128 warm, r;
    ck->text = text;
    memset(&warm, 0, sizeof warm);
    memset(&r, 0, sizeof r);
    char warm_what[96];
    snprintf(warm_what, sizeof warm_what, "%s (warm-up)", what);
    loop(gen, ck, bench_mono_ns() + WARMUP_NS, &warm);
    report_run(ck, warm_what, &warm);
    r.record = true;
    loop(gen, ck, bench_mono_ns() + (int64_t)(secs * 1e9), &r);
    report_run(ck, what, &r);
    return r.count ? (double)r.ns / (double)r.count : 0.0;
}


/*
 * The floor of a monotonic UUIDv7 generator shared by threads, written
 * inline: per id one clock read, one draw of the 4 random bytes of the
 * increment, and a lock around a two-word state (a 48-bit time and 74
 * random bits do not fit one compare-and-swap).
 */
static double measure_uuid7_floor(double secs)
{
    static atomic_flag lock = ATOMIC_FLAG_INIT;
    static uint64_t state[2];
    struct timespec ts;
    uint64_t n = 0;
    int64_t t0 = bench_mono_ns(), deadline = t0 + (int64_t)(secs * 1e9), now;
    for (;;) {
        for (int i = 0; i < CHUNK; i++) {
            uint32_t inc;
            clock_gettime(CLOCK_REALTIME, &ts);
            if (idm_random_bytes(&inc, sizeof inc) != 0)
                bench_wrong("idm_random_bytes(4) failed");
            while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire)) {
            }
            state[0] = (uint64_t)ts.tv_nsec;
            state[1] += (uint64_t)inc + 1;
            atomic_flag_clear_explicit(&lock, memory_order_release);
        }
        n += CHUNK;
        now = bench_mono_ns();
        if (now >= deadline)
            break;
    }
    BENCH_CLOBBER(state);
    return (double)(now - t0) / (double)n;
}

/* ---------------------------------------------------------------- rounds */

enum metric {
    M_CLK,    /* F1 */
    M_RND,    /* F2 */
    M_GETRND, /* F3 */
    M_U7F,    /* F4 */
    M_U7,     /* 6 */
    M_U4,     /* 7 */
    M_UL,     /* 8 */
    M_ULT,    /* 9 */
    M_U7T,    /* 10 */
    M_OID,    /* 11 */
    M_U4T,    /* 12 */
    M_F12,    /* F1 + F2 of the round */
    M_LU_RND, /* P6 */
    M_LU_TIME,/* P7 */
    M_LU_V7,  /* P8 */
    M_COUNT
};

static double g_m[BENCH_ROUNDS_MAX][M_COUNT];
static int g_rounds;

typedef struct gens {
    idm_uuid7_gen *u7;
    idm_ulid_gen *ul;
    idm_objectid_gen *oid;
    /* one per generator: the binary and the text measurements of a
     * generator continue one sequence */
    checker ck_rnd, ck_getrnd, ck_u7, ck_u4, ck_ul, ck_oid, ck_lu_rnd,
        ck_lu_time, ck_lu_v7;
} gens;

static void checker_init(checker *ck, enum kind k)
{
    memset(ck, 0, sizeof *ck);
    ck->kind = k;
}

static void one_round(double *m, double secs, gens *G)
{
    {
        uint64_t n;
        int64_t ns = bench_run_clock_reads(secs / 2, &n);
        m[M_CLK] = (double)ns / (double)n;
    }
    m[M_RND] = measure("idm_random_bytes(16)", loop_random_bytes, NULL,
                       &G->ck_rnd, T_NONE, secs / 2);
    m[M_GETRND] = measure("getrandom(16)", loop_getrandom, NULL,
                          &G->ck_getrnd, T_NONE, secs / 2);
    m[M_F12] = m[M_CLK] + m[M_RND];
    m[M_U7F] = measure_uuid7_floor(secs / 2);
    m[M_U7] = measure("uuid7", loop_uuid7, G->u7, &G->ck_u7, T_NONE, secs);
    m[M_U4] = measure("uuid4", loop_uuid4, NULL, &G->ck_u4, T_NONE, secs);
    m[M_UL] = measure("ulid", loop_ulid, G->ul, &G->ck_ul, T_NONE, secs);
    m[M_ULT] = measure("ulid text", loop_ulid_text, G->ul, &G->ck_ul, T_ULID,
                       secs);
    m[M_U7T] = measure("uuid7 text", loop_uuid7_text, G->u7, &G->ck_u7,
                       T_UUID, secs);
    m[M_OID] = measure("objectid", loop_objectid, G->oid, &G->ck_oid, T_NONE,
                       secs);
    m[M_U4T] = measure("uuid4 text", loop_uuid4_text, NULL, &G->ck_u4, T_UUID,
                       secs);
#if IDM_BENCH_LIBUUID
    m[M_LU_RND] = measure("libuuid uuid_generate_random", loop_lu_random, NULL,
                          &G->ck_lu_rnd, T_NONE, secs);
    m[M_LU_TIME] = measure("libuuid uuid_generate_time", loop_lu_time, NULL,
                           &G->ck_lu_time, T_NONE, secs);
#if IDM_BENCH_LIBUUID_V7
    m[M_LU_V7] = measure("libuuid uuid_generate_time_v7", loop_lu_v7, NULL,
                         &G->ck_lu_v7, T_NONE, secs);
#endif
#endif
}

/* Median over the rounds of metric a divided by metric b of the same round
 * (b < 0: by 1). */
static double med_ratio(int a, int b)
{
    double v[BENCH_ROUNDS_MAX];
    for (int r = 0; r < g_rounds; r++)
        v[r] = g_m[r][a] / (b >= 0 ? g_m[r][b] : 1.0);
    return bench_median(v, g_rounds);
}

static double med(int a)
{
    return med_ratio(a, -1);
}

static const char *spread(char *buf, size_t len, int a)
{
    double lo = g_m[0][a], hi = g_m[0][a];
    for (int r = 1; r < g_rounds; r++) {
        if (g_m[r][a] < lo)
            lo = g_m[r][a];
        if (g_m[r][a] > hi)
            hi = g_m[r][a];
    }
    if (g_rounds == 1)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f..%.1f", lo, hi);
    return buf;
}

static const char *status_le(double v, double target)
{
    return v <= target ? "PASS" : "BELOW";
}

#if IDM_BENCH_LIBUUID
static const char *status_ge(double v, double target)
{
    return v >= target ? "PASS" : "BELOW";
}
#endif

/* One ns/id row; ratio_fmt gets the median per-round ratio a/b. */
static void row(const char *item, const char *what, int a, const char *ratio,
                const char *target, const char *status)
{
    char fig[32], spr[48];
    snprintf(fig, sizeof fig, "%.1f ns/id", med(a));
    bench_row(item, what, fig, ratio, spread(spr, sizeof spr, a), target,
              status);
}

#if IDM_BENCH_LIBUUID
/* Where libuuid's time-based UUIDs come from: uuidd, or the library. */
static const char *uuidd_state(void)
{
    struct stat st;
    if (stat("/run/uuidd/request", &st) == 0 ||
        stat("/var/run/uuidd/request", &st) == 0)
        return "uuidd is running: time UUIDs come from it";
    return "no uuidd running: each call tries its socket, then makes the "
           "UUID itself";
}
#endif

/* ------------------------------------------------------------------ main */

static void open_gens(gens *G)
{
    int rc = idm_uuid7_gen_new(&G->u7, NULL, NULL);
    if (rc == 0)
        rc = idm_ulid_gen_new(&G->ul, NULL, NULL, true);
    if (rc == 0)
        rc = idm_objectid_gen_new(&G->oid, NULL, NULL);
    if (rc != 0) {
        fprintf(stderr, "idm_bench128: cannot open a generator: %s (%s)\n",
                idm_strerror(rc), idm_error_detail());
        exit(1);
    }
    checker_init(&G->ck_rnd, K_RANDOM);
    checker_init(&G->ck_getrnd, K_RANDOM);
    checker_init(&G->ck_u7, K_UUID7);
    checker_init(&G->ck_u4, K_UUID4);
    checker_init(&G->ck_ul, K_ULID);
    checker_init(&G->ck_oid, K_OID);
    checker_init(&G->ck_lu_rnd, K_UUID4);
    checker_init(&G->ck_lu_time, K_UUID1);
    checker_init(&G->ck_lu_v7, K_PEER7);
}

int main(int argc, char **argv)
{
    const char *ref_out = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ref-out") == 0 && i + 1 < argc)
            ref_out = argv[++i];
        else {
            fprintf(stderr, "usage: idm_bench128 [--ref-out FILE]\n");
            return 1;
        }
    }
    double secs = bench_seconds();
    g_rounds = bench_rounds();
    static gens G;
    open_gens(&G);

    bench_printf("\nidmint %s 128-bit id benchmark: one thread, %d rounds, each "
                 "measurement %.1f s of wall time\n(floors %.1f s), only the "
                 "minting timed, %d ids between two clock reads; figure = "
                 "median,\nratio = median of the per-round ratios, spread = "
                 "min..max of the figure\n", idm_version(), g_rounds, secs,
                 secs / 2, CHUNK);
    bench_print_machine();
    for (int r = 0; r < g_rounds; r++) {
        bench_printf("round %d of %d...\n", r + 1, g_rounds);
        one_round(g_m[r], secs, &G);
    }
    char load[64];
    bench_printf("load average after the rounds: %s\n",
                 bench_loadavg(load, sizeof load));

    char rat[96];
    bench_table_header("idmint 128-bit ids, 1 thread (targets from the "
                       "acceptance list; BELOW never fails the run)");
    row("F1", "floor: clock_gettime(CLOCK_REALTIME)", M_CLK,
        "a time-based id reads it once", "", "");
    row("F2", "floor: idm_random_bytes, 16 bytes", M_RND,
        "the random part of an id", "", "");
    snprintf(rat, sizeof rat, "%.1f x F2: a system call per id",
             med_ratio(M_GETRND, M_RND));
    row("F3", "floor: getrandom(2), 16 bytes", M_GETRND, rat, "", "");
    snprintf(rat, sizeof rat, "item 6 = %.2f x this floor",
             med_ratio(M_U7, M_U7F));
    row("F4", "floor: clock + 4 random bytes + lock", M_U7F, rat, "", "");
    double u7 = med(M_U7), u4 = med(M_U4), ult = med(M_ULT);
    snprintf(rat, sizeof rat, "%.2f x F4; %.2f x (F1 + F2)",
             med_ratio(M_U7, M_U7F), med_ratio(M_U7, M_F12));
    row("6", "idm_uuid7_next", M_U7, rat, "<= 30 ns", status_le(u7, 30.0));
    snprintf(rat, sizeof rat, "%.2f x F2 (16 random bytes)",
             med_ratio(M_U4, M_RND));
    row("7", "idm_uuid4(NULL)", M_U4, rat, "<= 25 ns", status_le(u4, 25.0));
    snprintf(rat, sizeof rat, "%.2f x F1 (clock read)", med_ratio(M_UL, M_CLK));
    row("8", "idm_ulid_next, monotonic (binary)", M_UL, rat, "", "");
    snprintf(rat, sizeof rat, "%.2f x item 8 (binary)",
             med_ratio(M_ULT, M_UL));
    row("9", "idm_ulid_next + idm_ulid_format", M_ULT, rat, "<= 40 ns",
        status_le(ult, 40.0));
    snprintf(rat, sizeof rat, "%.2f x item 6 (binary)",
             med_ratio(M_U7T, M_U7));
    row("10", "idm_uuid7_next + idm_uuid_format", M_U7T, rat, "", "");
    snprintf(rat, sizeof rat, "%.2f x F1 (clock read)",
             med_ratio(M_OID, M_CLK));
    row("11", "idm_objectid_next", M_OID, rat, "", "");
    snprintf(rat, sizeof rat, "%.2f x item 7 (binary)",
             med_ratio(M_U4T, M_U4));
    row("12", "idm_uuid4 + idm_uuid_format", M_U4T, rat, "", "");

    bench_table_header("C peer: libuuid (idmint/peer: the peer's ns/id over "
                       "idmint's, same round; > 1: idmint faster)");
#if IDM_BENCH_LIBUUID
    double vs_random = med_ratio(M_LU_RND, M_U4);
    snprintf(rat, sizeof rat, "idmint/peer %.1f (item 7, UUIDv4)", vs_random);
    row("P6", "libuuid uuid_generate_random", M_LU_RND, rat, ">= 5x",
        status_ge(vs_random, 5.0));
    snprintf(rat, sizeof rat, "idmint/peer %.1f (item 6, UUIDv7)",
             med_ratio(M_LU_TIME, M_U7));
    row("P7", "libuuid uuid_generate_time (v1)", M_LU_TIME, rat, "", "");
#if IDM_BENCH_LIBUUID_V7
    snprintf(rat, sizeof rat, "idmint/peer %.1f (item 6, UUIDv7)",
             med_ratio(M_LU_V7, M_U7));
    row("P8", "libuuid uuid_generate_time_v7", M_LU_V7, rat, "", "");
#else
    bench_row("P8", "libuuid uuid_generate_time_v7", "skipped",
              "libuuid " IDM_BENCH_LIBUUID_VERSION " has no such function", "",
              "", "");
#endif
    bench_printf("libuuid %s: uuid_generate_random = %.1f x getrandom(16) "
                 "(F3); %s\n", IDM_BENCH_LIBUUID_VERSION,
                 med_ratio(M_LU_RND, M_GETRND), uuidd_state());
#else
    bench_row("P6", "libuuid uuid_generate_random", "skipped", "no libuuid",
              "", ">= 5x", "");
    bench_row("P7", "libuuid uuid_generate_time (v1)", "skipped", "no libuuid",
              "", "", "");
    bench_row("P8", "libuuid uuid_generate_time_v7", "skipped", "no libuuid",
              "", "", "");
    bench_printf("libuuid peer: skipped: %s when the benchmark was "
                 "configured (Debian package uuid-dev: install it and "
                 "configure again)\n", IDM_BENCH_LIBUUID_WHY);
#endif

    if (ref_out != NULL) {
        FILE *f = fopen(ref_out, "w");
        if (f == NULL) {
            fprintf(stderr, "idm_bench128: %s: %s\n", ref_out, strerror(errno));
        } else {
            fprintf(f, "uuid7_ns %.3f\nuuid7_text_ns %.3f\nuuid4_ns %.3f\n"
                       "uuid4_text_ns %.3f\nulid_ns %.3f\nulid_text_ns %.3f\n",
                    u7, med(M_U7T), u4, med(M_U4T), med(M_UL), ult);
            fclose(f);
        }
    }

    /* One id of each kind, as the last check saw it. */
    char t[TEXT_LEN], t2[TEXT_LEN];
    ref_uuid_text(G.ck_u7.prev, t);
    ref_ulid_text(G.ck_ul.prev, t2);
    bench_printf("e.g. uuid7 %s, ulid %s", t, t2);
    hex_text(G.ck_oid.prev, 12, t);
    bench_printf(", objectid %s\n", t);

    idm_uuid7_gen_free(G.u7);
    idm_ulid_gen_free(G.ul);
    idm_objectid_gen_free(G.oid);
    if (bench_wrong_count() != 0) {
        bench_printf("\nidm_bench128: %u correctness check(s) FAILED: the "
                     "figures above are not valid\n", bench_wrong_count());
        return 2;
    }
    bench_printf("\ncorrectness checks passed: version and variant bits, ids "
                 "of one UUIDv7 or ULID generator strictly\nincrease (step 1 "
                 "to 2^32, or +1, within a ms), times within each chunk, "
                 "ObjectId counter +1,\ntext matches the binary id, no "
                 "duplicates among the first %d ids of each timed run\n",
                 WINDOW);
    return 0;
}
