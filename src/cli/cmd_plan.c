/* SPDX-License-Identifier: MIT */
/*
 * `idmint plan` and `idmint estimate`: capacity planning for a layout.
 *
 * plan: what a layout gives (lifespan, worker ids, ids per second per
 * worker and for the fleet, when ids pass 2^53 and when the sign bit turns
 * on, an example id), a verdict per stated need (--workers, --peak) and the
 * 63-bit layout with the longest lifespan that meets them.
 *
 * estimate: back-of-envelope from a fleet-wide peak rate and a process
 * count: the share of worker ids in use (normally and during deploys), the
 * busiest process's share of the sequence space, the time field's lifespan
 * and the index bytes saved against 128-bit keys.
 *
 * Everything is checked before anything is printed. The math avoids libm:
 * the program does not link it.
 */
#include "cli.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A Julian year in ms (365.25 days): the unit of every "years" figure. */
#define MS_PER_YEAR 31557600000.0
/* 2^53: the first integer a double (a JSON number in most parsers) cannot
 * tell from its neighbour. */
#define TWO_53 (UINT64_C(1) << 53)

/* Limits of the numeric options. */
#define RATE_MAX 1e12
#define PROCESSES_MAX 10000000u
#define SKEW_MAX 1e6
#define SURGE_MAX 100.0
#define ROWS_MAX UINT64_C(1000000000000000000)
#define INDEXES_MAX 1000u
#define WORKERS_MAX (UINT64_C(1) << 32)

static const char plan_usage[] =
    "usage: idmint plan [--layout L] [--epoch T] [--workers N]\n"
    "                   [--peak IDS_PER_S] [--at TIME] [--json]\n"
    "\n"
    "What a layout gives: when its time field runs out, the worker ids and\n"
    "the ids per second per worker and for the fleet, when ids pass 2^53\n"
    "(JSON consumers must then get strings) and when the sign bit turns on,\n"
    "an example id with its decode, a verdict per stated need, and the\n"
    "63-bit layout with the longest lifespan that meets the needs.\n"
    "\n"
    CLI_HELP_LAYOUT
    "      --workers N        worker ids needed (1 to 4294967296)\n"
    "      --peak IDS_PER_S   peak ids per second of one worker (above 0,\n"
    "                         at most 1e12)\n"
    "      --node NAME=VALUE  a node value of the example id (repeat; the\n"
    "                         default: 0, and 1 for the last node field)\n"
    "      --at TIME          time of the example id, unix ms or ISO-8601\n"
    "                         (default now)\n"
    "      --json             one JSON object (ids as strings)\n"
    "  -h, --help             show this help\n";

static const char estimate_usage[] =
    "usage: idmint estimate --rate IDS_PER_S --processes N [--skew X]\n"
    "                       [--surge X] [--rows N] [--indexes N]\n"
    "                       [--layout L] [--epoch T] [--json]\n"
    "\n"
    "Back-of-envelope capacity check from the fleet-wide peak rate: worker\n"
    "ids in use (normally and during deploys), the busiest process's ids\n"
    "per tick and share of the sequence space, the time field's lifespan\n"
    "and the index bytes saved against 128-bit keys. Lines starting\n"
    "\"warning:\" flag a fleet the layout does not fit.\n"
    "\n"
    "      --rate IDS_PER_S   peak ids per second of the whole fleet (above\n"
    "                         0, at most 1e12)\n"
    "      --processes N      processes minting ids (1 to 10000000)\n"
    "      --skew X           the busiest process takes X times the average\n"
    "                         (1 to 1e6; default 1)\n"
    "      --surge X          during deploys old and new processes overlap:\n"
    "                         N x X hold worker ids (1 to 100; default 2)\n"
    "      --rows N           rows keyed by these ids (1 to 1e18)\n"
    "      --indexes N        indexes holding the key (1 to 1000; default 1;\n"
    "                         needs --rows)\n"
    CLI_HELP_LAYOUT
    "      --json             one JSON object\n"
    "  -h, --help             show this help\n";

/* ---- parsing ---- */

/*
 * A decimal number: digits, an optional fraction (".digits") and an
 * optional exponent ("e", sign, digits). No sign, spaces, hex, inf or nan.
 * Must be finite and within [min, max] (above min when min_open).
 */
static int parse_decimal(const char *cmd, const char *opt, const char *text,
                         double min, bool min_open, double max,
                         const char *range, double *out)
{
    const char *p = text;
    bool good = false;
    if (*p >= '0' && *p <= '9') {
        while (*p >= '0' && *p <= '9')
            p++;
        good = true;
        if (*p == '.') {
            p++;
            if (!(*p >= '0' && *p <= '9'))
                good = false;
            while (*p >= '0' && *p <= '9')
                p++;
        }
        if (good && (*p == 'e' || *p == 'E')) {
            p++;
            if (*p == '+' || *p == '-')
                p++;
            if (!(*p >= '0' && *p <= '9'))
                good = false;
            while (*p >= '0' && *p <= '9')
                p++;
        }
        if (*p != '\0')
            good = false;
    }
    if (!good) {
        cli_error(cmd, "bad %s '%s': not a decimal number (want e.g. 2.5 or "
                  "1e6)", opt, text);
        return CLI_USAGE;
    }
    errno = 0;
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == NULL || *end != '\0' || !isfinite(v) || errno == ERANGE ||
        v < min || (min_open && v == min) || v > max) {
        cli_error(cmd, "bad %s '%s': must be %s", opt, text, range);
        return CLI_USAGE;
    }
    *out = v;
    return CLI_OK;
}

/* A whole number from min to max (idm_u64_parse syntax). */
static int parse_whole(const char *cmd, const char *opt, const char *text,
                       uint64_t min, uint64_t max, const char *range,
                       uint64_t *out)
{
    int rc = idm_u64_parse(text, out);
    if (rc != 0) {
        cli_lib_error(cmd, rc, "bad %s '%s'", opt, text);
        return CLI_USAGE;
    }
    if (*out < min || *out > max) {
        cli_error(cmd, "bad %s '%s': must be %s", opt, text, range);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* ---- formatting ---- */

/* Drop trailing zeros of a fraction, and the point if nothing is left. */
static void trim_zeros(char *s)
{
    if (strchr(s, '.') == NULL || strchr(s, 'e') != NULL)
        return;
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '0')
        s[--n] = '\0';
    if (n > 0 && s[n - 1] == '.')
        s[--n] = '\0';
}

/* A count or rate: whole numbers below 2^53 exactly, others to a few
 * digits ("2.5", "1365333.3", "0.00012", "1.845e+19"). */
static const char *fmt_num(double v, char *buf, size_t len)
{
    if (v >= 9007199254740992.0)
        snprintf(buf, len, "%.4g", v);
    else if (v == (double)(uint64_t)v)
        snprintf(buf, len, "%llu", (unsigned long long)(uint64_t)v);
    else if (v >= 1000)
        snprintf(buf, len, "%.1f", v);
    else if (v >= 0.001)
        snprintf(buf, len, "%.4g", v);
    else
        snprintf(buf, len, "%.3g", v);
    trim_zeros(buf);
    return buf;
}

/* A percentage: one decimal from 1%, two below, two digits below 0.01%
 * (and three digits from a million %). */
static const char *fmt_pct(double p, char *buf, size_t len)
{
    if (p >= 1e6)
        snprintf(buf, len, "%.3g%%", p);
    else if (p >= 1 || p == 0)
        snprintf(buf, len, "%.1f%%", p);
    else if (p >= 0.01)
        snprintf(buf, len, "%.2f%%", p);
    else
        snprintf(buf, len, "%.2g%%", p);
    return buf;
}

/* Bytes in decimal units: "800 GB", "2.4 TB", "12.5 kB". */
static const char *fmt_bytes(double b, char *buf, size_t len)
{
    static const char *const units[] = {"B",  "kB", "MB", "GB",
                                        "TB", "PB", "EB", "ZB"};
    size_t u = 0;
    while (u + 1 < sizeof units / sizeof units[0] && b >= 999.5) {
        b /= 1000;
        u++;
    }
    if (b >= 100 || u == 0)
        snprintf(buf, len, "%.0f", b);
    else if (b >= 10)
        snprintf(buf, len, "%.1f", b);
    else
        snprintf(buf, len, "%.2f", b);
    trim_zeros(buf);
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, " %s", units[u]);
    return buf;
}

/* A time as ISO text, or "after year 9999". */
static const char *time_or_far(idm_unix_ms t, char *buf)
{
    if (!cli_time_text(t, buf))
        snprintf(buf, IDM_TIME_TEXT_MAX, "after year 9999");
    return buf;
}

/* A JSON string member for a time: "\"...\"" or null. */
static const char *json_time(idm_unix_ms t, char *buf)
{
    char iso[IDM_TIME_TEXT_MAX];
    if (cli_time_text(t, iso))
        snprintf(buf, IDM_TIME_TEXT_MAX + 2, "\"%s\"", iso);
    else
        snprintf(buf, IDM_TIME_TEXT_MAX + 2, "null");
    return buf;
}

/* The tick as the text form writes it: "1ms", "10ms", "1s". */
static void tick_text(int64_t tick_ms, char *buf, size_t len)
{
    if (tick_ms % 1000 == 0)
        snprintf(buf, len, "%llds", (long long)(tick_ms / 1000));
    else
        snprintf(buf, len, "%lldms", (long long)tick_ms);
}

/* The time field's span: "(2^41 ms)" or "(2^39 ticks of 10 ms)". */
static void span_text(unsigned time_bits, int64_t tick_ms, char *buf,
                      size_t len)
{
    if (tick_ms == 1)
        snprintf(buf, len, "2^%u ms", time_bits);
    else
        snprintf(buf, len, "2^%u ticks of %lld ms", time_bits,
                 (long long)tick_ms);
}

static idm_unix_ms now_ms(void)
{
    const idm_clock *c = idm_clock_system();
    idm_wall_ns ns = c->wall_ns(c->ctx);
    return (idm_unix_ms)(ns / 1000000);
}

static double pow2(unsigned k)
{
    double v = 1;
    while (k-- > 0)
        v *= 2;
    return v;
}

/* The smallest k >= 1 with 2^k >= x. */
static unsigned bits_for(double x)
{
    unsigned k = 1;
    while (k < 200 && pow2(k) < x)
        k++;
    return k;
}

/* ---- layout facts shared by both commands ---- */

typedef struct layout_facts {
    char label[IDM_LAYOUT_TEXT_MAX]; /* preset name or "custom" */
    char text[IDM_LAYOUT_TEXT_MAX];
    idm_unix_ms epoch;
    int64_t tick_ms;
    unsigned bits, time_bits, time_shift, seq_bits, node_bits;
    size_t node_fields;
    uint64_t worker_ids;       /* 2^node_bits */
    idm_unix_ms time_end;
    double span_years;         /* the whole time field */
    double per_tick;           /* 2^seq_bits */
    double per_second;         /* per worker */
} layout_facts;

static void get_facts(const idm_layout *l, layout_facts *f)
{
    memset(f, 0, sizeof *f);
    snprintf(f->label, sizeof f->label, "%s", idm_layout_name(l));
    idm_layout_format(l, f->text, sizeof f->text);
    f->epoch = idm_layout_epoch(l);
    f->tick_ms = idm_layout_tick_ms(l);
    f->bits = idm_layout_bits(l);
    f->seq_bits = idm_layout_seq_bits(l);
    size_t count = idm_layout_field_count(l);
    for (size_t i = 0; i < count; i++) {
        idm_field_info fi;
        if (idm_layout_field(l, i, &fi) != 0)
            continue;
        if (fi.kind == IDM_FIELD_TIME) {
            f->time_bits = fi.bits;
            f->time_shift = fi.shift;
        } else if (fi.kind == IDM_FIELD_NODE) {
            f->node_bits += fi.bits;
            f->node_fields++;
        }
    }
    f->worker_ids = UINT64_C(1) << f->node_bits; /* node bits <= 62 */
    f->time_end = idm_layout_time_end(l);
    f->span_years = pow2(f->time_bits) * (double)f->tick_ms / MS_PER_YEAR;
    f->per_tick = pow2(f->seq_bits);
    f->per_second = f->per_tick * 1000.0 / (double)f->tick_ms;
}

/*
 * When ids first reach 2^53. Returns false if they never do (53 bits or
 * fewer). The time field is the top field: with its lowest bit at shift
 * s <= 53, ids of tick t lie in [t << s, (t << s) + 2^s - 1], so the first
 * tick whose ids reach 2^53 is 2^(53 - s); with s > 53 ids of the first
 * tick already can.
 */
static bool over_53_from(const layout_facts *f, idm_unix_ms *from)
{
    if (f->bits <= 53)
        return false;
    if (f->time_shift > 53) {
        *from = f->epoch;
        return true;
    }
    uint64_t tick = TWO_53 >> f->time_shift;
    /* tick < 2^time_bits, so the time fits (the layout checked its end). */
    *from = f->epoch + (int64_t)tick * f->tick_ms;
    return true;
}

/* ---- plan ---- */

enum {
    OPT_HELP,
    OPT_LAYOUT,
    OPT_EPOCH,
    OPT_JSON,
    OPT_WORKERS,
    OPT_PEAK,
    OPT_AT,
    OPT_NODE,
    OPT_RATE,
    OPT_PROCESSES,
    OPT_SKEW,
    OPT_SURGE,
    OPT_ROWS,
    OPT_INDEXES
};

static const cli_opt plan_options[] = {
    {"help", 'h', false, OPT_HELP},
    {"layout", 0, true, OPT_LAYOUT},
    {"epoch", 0, true, OPT_EPOCH},
    {"json", 0, false, OPT_JSON},
    {"workers", 0, true, OPT_WORKERS},
    {"peak", 0, true, OPT_PEAK},
    {"at", 0, true, OPT_AT},
    {"node", 0, true, OPT_NODE},
    {NULL, 0, false, 0},
};

/* The suggested layout: 63 bits, the given tick, node bits for the
 * workers, seq bits for the peak, the rest to time. */
typedef struct suggestion {
    bool fits;
    unsigned node_bits, seq_bits, time_bits;
    char text[IDM_LAYOUT_TEXT_MAX];
    idm_unix_ms time_end;
    double span_years;
} suggestion;

static void suggest(const layout_facts *f, bool have_workers, uint64_t workers,
                    bool have_peak, double peak, suggestion *s)
{
    memset(s, 0, sizeof *s);
    /* Needs not stated keep the given layout's capacity. */
    s->node_bits = have_workers ? bits_for((double)workers)
                                : (f->node_bits > 0 ? f->node_bits : 1);
    s->seq_bits = have_peak ? bits_for(peak * (double)f->tick_ms / 1000.0)
                            : f->seq_bits;
    if (s->node_bits + s->seq_bits > 62)
        return;
    char tick[32];
    tick_text(f->tick_ms, tick, sizeof tick);
    /* Take the rest to time, fewer bits if the time field would run past
     * what 64-bit milliseconds count (long ticks). */
    for (unsigned tb = 63 - s->node_bits - s->seq_bits; tb >= 1; tb--) {
        char text[IDM_LAYOUT_TEXT_MAX];
        snprintf(text, sizeof text, "time:%u@%s,worker:%u,seq:%u", tb, tick,
                 s->node_bits, s->seq_bits);
        idm_layout *l = NULL;
        if (idm_layout_parse(&l, text, f->epoch) == 0) {
            s->fits = true;
            s->time_bits = tb;
            idm_layout_format(l, s->text, sizeof s->text);
            s->time_end = idm_layout_time_end(l);
            s->span_years = pow2(tb) * (double)f->tick_ms / MS_PER_YEAR;
            idm_layout_free(l);
            return;
        }
    }
}

typedef struct plan_args {
    bool json;
    bool have_workers, have_peak, have_at;
    uint64_t workers;
    double peak;
    idm_unix_ms at;
} plan_args;

/* The example id's node values: all 0 but the last node field's, 1. */
static void example_nodes(const idm_layout *l, uint64_t *node)
{
    size_t count = idm_layout_field_count(l);
    size_t last = count;
    memset(node, 0, sizeof(uint64_t) * IDM_LAYOUT_MAX_FIELDS);
    for (size_t i = 0; i < count; i++) {
        idm_field_info fi;
        if (idm_layout_field(l, i, &fi) == 0 && fi.kind == IDM_FIELD_NODE)
            last = i;
    }
    if (last < count)
        node[last] = 1;
}

static void plan_text(const idm_layout *l, const layout_facts *f,
                      const plan_args *a, idm_unix_ms now, uint64_t id,
                      const uint64_t *node, const suggestion *s)
{
    char buf[IDM_TIME_TEXT_MAX], buf2[IDM_TIME_TEXT_MAX];
    char n1[64], n2[64], n3[64];
    char idtext[CLI_U64_TEXT_MAX];
    size_t count = idm_layout_field_count(l);

    printf("layout: %s (%s), epoch %lld (%s), tick %lld ms\n", f->label,
           f->text, (long long)f->epoch, time_or_far(f->epoch, buf),
           (long long)f->tick_ms);

    double left = ((double)f->time_end - (double)now) / MS_PER_YEAR;
    span_text(f->time_bits, f->tick_ms, n1, sizeof n1);
    if (cli_time_text(f->time_end, buf)) {
        if (now < f->time_end)
            printf("time runs out: %s (year %.4s, %.1f years from now; the "
                   "field spans %.1f years, %s)\n", buf, buf, left,
                   f->span_years, n1);
        else
            printf("time runs out: %s (year %.4s, RAN OUT %.1f years ago; "
                   "the field spans %.1f years, %s)\n", buf, buf, -left,
                   f->span_years, n1);
    } else {
        printf("time runs out: after year 9999 (%.1f years from now; the "
               "field spans %.1f years, %s)\n", left, f->span_years, n1);
    }

    /* worker ids */
    cli_u64_dec(f->worker_ids, idtext);
    if (f->node_fields == 0) {
        printf("worker ids available: 1 (no node fields: one generator "
               "per layout and epoch)\n");
    } else {
        printf("worker ids available: %s (", idtext);
        bool first = true;
        for (size_t i = 0; i < count; i++) {
            idm_field_info fi;
            if (idm_layout_field(l, i, &fi) != 0 ||
                fi.kind != IDM_FIELD_NODE)
                continue;
            printf("%s%s %u bits", first ? "" : " + ", fi.name, fi.bits);
            first = false;
        }
        printf(" = 2^%u)\n", f->node_bits);
    }

    /* rates */
    printf("ids per second per worker: %s (%s per %lld ms tick)\n",
           fmt_num(f->per_second, n1, sizeof n1),
           fmt_num(f->per_tick, n2, sizeof n2), (long long)f->tick_ms);
    printf("ids per second, whole fleet: %s (x %s worker ids available)\n",
           fmt_num(f->per_second * (double)f->worker_ids, n1, sizeof n1),
           idtext);
    if (a->have_workers) {
        cli_u64_dec(a->workers, n3);
        printf("ids per second, %s workers: %s (x %s)\n", n3,
               fmt_num(f->per_second * (double)a->workers, n1, sizeof n1),
               n3);
    }

    /* 2^53 */
    idm_unix_ms from = 0;
    if (!over_53_from(f, &from)) {
        printf("ids above 2^53: never (the layout uses %u bits): JSON "
               "numbers hold every id\n", f->bits);
    } else if (now >= from) {
        printf("ids above 2^53: yes, since %s: JSON consumers must get ids "
               "as strings\n", time_or_far(from, buf));
    } else {
        printf("ids above 2^53: not yet; from %s (%.1f years from now): "
               "JSON consumers must get ids as strings\n",
               time_or_far(from, buf),
               ((double)from - (double)now) / MS_PER_YEAR);
    }

    /* sign bit */
    if (!idm_layout_sign_bit(l, &from)) {
        printf("sign bit: not used: ids stay positive as signed 64-bit "
               "integers\n");
    } else if (now >= from) {
        printf("sign bit: USED: ids read as signed 64-bit integers (Java "
               "long, SQL bigint) are negative since %s\n",
               time_or_far(from, buf));
    } else {
        printf("sign bit: USED: ids read as signed 64-bit integers (Java "
               "long, SQL bigint) turn negative from %s (%.1f years from "
               "now)\n", time_or_far(from, buf),
               ((double)from - (double)now) / MS_PER_YEAR);
    }

    /* example */
    cli_u64_dec(id, idtext);
    printf("example id: %s (at %s,", idtext, time_or_far(a->at, buf2));
    for (size_t i = 0; i < count; i++) {
        idm_field_info fi;
        if (idm_layout_field(l, i, &fi) == 0 && fi.kind == IDM_FIELD_NODE)
            printf(" %s=%llu", fi.name, (unsigned long long)node[i]);
    }
    printf(" seq=0)\n");
    idm_decoded d;
    if (idm_layout_decode(l, id, &d) == 0) {
        fputs("decoded: ", stdout);
        cli_print_decoded(stdout, l, id, &d, false);
    }

    /* verdicts */
    if (now < f->time_end)
        printf("lifespan: ok (%.1f years left)\n", left);
    else
        printf("lifespan: RAN OUT (on %s)\n", time_or_far(f->time_end, buf));
    if (a->have_workers) {
        cli_u64_dec(a->workers, n1);
        cli_u64_dec(f->worker_ids, n2);
        printf("workers: %s (need %s, have %s)\n",
               a->workers <= f->worker_ids ? "ok" : "NOT ENOUGH", n1, n2);
    }
    if (a->have_peak)
        printf("peak: %s (need %s ids/s per worker, the sequence gives %s)\n",
               a->peak <= f->per_second ? "ok" : "NOT COVERED",
               fmt_num(a->peak, n1, sizeof n1),
               fmt_num(f->per_second, n2, sizeof n2));

    /* suggestion */
    if (!s->fits) {
        printf("suggested layout: none: %u worker bits and %u sequence bits "
               "leave no time bits in 63\n", s->node_bits, s->seq_bits);
    } else {
        span_text(s->time_bits, f->tick_ms, n1, sizeof n1);
        if (now < s->time_end)
            snprintf(n2, sizeof n2, "%.1f years from now",
                     ((double)s->time_end - (double)now) / MS_PER_YEAR);
        else
            snprintf(n2, sizeof n2, "ALREADY RAN OUT: needs a later epoch");
        printf("suggested layout: %s --epoch %lld (time runs out %s, %s; "
               "lifespan %.1f years, %s)\n", s->text, (long long)f->epoch,
               time_or_far(s->time_end, buf), n2, s->span_years, n1);
    }
}

static void plan_json(const idm_layout *l, const layout_facts *f,
                      const plan_args *a, idm_unix_ms now, uint64_t id,
                      const suggestion *s)
{
    char t1[IDM_TIME_TEXT_MAX + 2], n1[64], n2[64];
    char num[CLI_U64_TEXT_MAX];
    double left = ((double)f->time_end - (double)now) / MS_PER_YEAR;

    printf("{\"layout\":\"%s\",\"text\":\"%s\",\"epoch_ms\":%lld,"
           "\"epoch\":%s,\"tick_ms\":%lld", f->label, f->text,
           (long long)f->epoch, json_time(f->epoch, t1),
           (long long)f->tick_ms);
    printf(",\"time_end_ms\":%lld,\"time_end\":%s,\"years_left\":%.1f,"
           "\"span_years\":%.1f,\"time_bits\":%u", (long long)f->time_end,
           json_time(f->time_end, t1), left, f->span_years, f->time_bits);
    cli_u64_dec(f->worker_ids, num);
    printf(",\"node_bits\":%u,\"worker_ids\":%s,\"seq_bits\":%u,"
           "\"ids_per_tick\":%s,\"ids_per_second_per_worker\":%s",
           f->node_bits, num, f->seq_bits, fmt_num(f->per_tick, n1, sizeof n1),
           fmt_num(f->per_second, n2, sizeof n2));
    printf(",\"ids_per_second_fleet\":%s",
           fmt_num(f->per_second * (double)f->worker_ids, n1, sizeof n1));
    if (a->have_workers)
        printf(",\"ids_per_second_workers\":%s",
               fmt_num(f->per_second * (double)a->workers, n1, sizeof n1));
    else
        printf(",\"ids_per_second_workers\":null");

    idm_unix_ms from = 0;
    if (over_53_from(f, &from))
        printf(",\"over_2_53\":%s,\"over_2_53_from_ms\":%lld,"
               "\"over_2_53_from\":%s", now >= from ? "true" : "false",
               (long long)from, json_time(from, t1));
    else
        printf(",\"over_2_53\":false,\"over_2_53_from_ms\":null,"
               "\"over_2_53_from\":null");
    if (idm_layout_sign_bit(l, &from))
        printf(",\"sign_bit\":true,\"negative_now\":%s,"
               "\"negative_from_ms\":%lld,\"negative_from\":%s",
               now >= from ? "true" : "false", (long long)from,
               json_time(from, t1));
    else
        printf(",\"sign_bit\":false,\"negative_now\":false,"
               "\"negative_from_ms\":null,\"negative_from\":null");

    cli_u64_dec(id, num);
    printf(",\"example\":{\"id\":\"%s\",\"at_ms\":%lld,\"at\":%s", num,
           (long long)a->at, json_time(a->at, t1));
    idm_decoded d;
    if (idm_layout_decode(l, id, &d) == 0) {
        printf(",\"time\":%s,\"unix_ms\":%lld", json_time(d.unix_ms, t1),
               (long long)d.unix_ms);
        size_t count = idm_layout_field_count(l);
        for (size_t i = 0; i < count; i++) {
            idm_field_info fi;
            if (idm_layout_field(l, i, &fi) != 0 || fi.kind == IDM_FIELD_TIME)
                continue;
            cli_u64_dec(d.value[i], num);
            printf(",\"%s\":%s", fi.name, num);
        }
    }
    printf("}");

    printf(",\"verdicts\":{\"lifespan\":\"%s\"",
           now < f->time_end ? "ok" : "RAN OUT");
    if (a->have_workers)
        printf(",\"workers\":\"%s\"",
               a->workers <= f->worker_ids ? "ok" : "NOT ENOUGH");
    if (a->have_peak)
        printf(",\"peak\":\"%s\"",
               a->peak <= f->per_second ? "ok" : "NOT COVERED");
    printf("}");
    if (a->have_workers) {
        cli_u64_dec(a->workers, num);
        printf(",\"workers_needed\":%s", num);
    } else {
        printf(",\"workers_needed\":null");
    }
    if (a->have_peak)
        printf(",\"peak_needed\":%s", fmt_num(a->peak, n1, sizeof n1));
    else
        printf(",\"peak_needed\":null");

    if (s->fits)
        printf(",\"suggested\":{\"text\":\"%s\",\"epoch_ms\":%lld,"
               "\"time_bits\":%u,\"node_bits\":%u,\"seq_bits\":%u,"
               "\"time_end_ms\":%lld,\"time_end\":%s,\"years_left\":%.1f,"
               "\"span_years\":%.1f}}\n",
               s->text, (long long)f->epoch, s->time_bits, s->node_bits,
               s->seq_bits, (long long)s->time_end,
               json_time(s->time_end, t1),
               ((double)s->time_end - (double)now) / MS_PER_YEAR,
               s->span_years);
    else
        printf(",\"suggested\":null}\n");
}

int cli_cmd_plan(int argc, char **argv)
{
    const char *cmd = "plan";
    cli_layout_args la = {NULL, NULL};
    plan_args a;
    memset(&a, 0, sizeof a);
    const char *at_text = NULL;
    const char *nodes[IDM_LAYOUT_MAX_FIELDS];
    size_t nnodes = 0;

    cli_parser p;
    const char *v;
    int id;
    cli_parser_init(&p, cmd, plan_options, argc, argv);
    while ((id = cli_next_opt(&p, &v)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR:
            return CLI_USAGE;
        case OPT_HELP:
            fputs(plan_usage, stdout);
            return CLI_OK;
        case CLI_OPT_POS:
            cli_error(cmd, "unexpected argument '%s'", v);
            return CLI_USAGE;
        case OPT_LAYOUT:
            la.spec = v;
            break;
        case OPT_EPOCH:
            la.epoch = v;
            break;
        case OPT_JSON:
            a.json = true;
            break;
        case OPT_WORKERS:
            if (parse_whole(cmd, "--workers", v, 1, WORKERS_MAX,
                            "1 to 4294967296", &a.workers) != CLI_OK)
                return CLI_USAGE;
            a.have_workers = true;
            break;
        case OPT_PEAK:
            if (parse_decimal(cmd, "--peak", v, 0, true, RATE_MAX,
                              "above 0 and at most 1e12", &a.peak) != CLI_OK)
                return CLI_USAGE;
            a.have_peak = true;
            break;
        case OPT_AT:
            at_text = v;
            break;
        case OPT_NODE:
            if (nnodes == IDM_LAYOUT_MAX_FIELDS) {
                cli_error(cmd, "more than %d --node options", IDM_LAYOUT_MAX_FIELDS);
                return CLI_USAGE;
            }
            nodes[nnodes++] = v;
            break;
        default:
            break;
        }
    }

    idm_layout *l = NULL;
    int status = cli_build_layout(cmd, &la, &l);
    if (status != CLI_OK)
        return status;
    layout_facts f;
    get_facts(l, &f);

    idm_unix_ms now = now_ms();
    a.at = now;
    if (at_text != NULL) {
        int rc = idm_time_parse(at_text, &a.at);
        if (rc != 0) {
            cli_lib_error(cmd, rc, "bad --at '%s'", at_text);
            idm_layout_free(l);
            return CLI_USAGE;
        }
        a.have_at = true;
    }
    char b1[IDM_TIME_TEXT_MAX], b2[IDM_TIME_TEXT_MAX];
    if (a.at < f.epoch || a.at >= f.time_end) {
        bool before = a.at < f.epoch;
        if (at_text != NULL)
            cli_error(cmd, "bad --at '%s': %s the layout's %s, %s", at_text,
                      before ? "before" : "at or past",
                      before ? "epoch" : "end",
                      time_or_far(before ? f.epoch : f.time_end, b1));
        else
            cli_error(cmd, "now (%s) is %s the layout's %s, %s: give --at "
                      "TIME for the example id", time_or_far(a.at, b2),
                      before ? "before" : "at or past",
                      before ? "epoch" : "end",
                      time_or_far(before ? f.epoch : f.time_end, b1));
        idm_layout_free(l);
        return CLI_USAGE;
    }
    uint64_t node[IDM_LAYOUT_MAX_FIELDS];
    example_nodes(l, node);
    if (nnodes > 0) {
        /* Given values replace the default example's; the others are 0. */
        uint32_t set = 0;
        memset(node, 0, sizeof node);
        for (size_t i = 0; i < nnodes; i++) {
            int nrc = idm_layout_parse_node(l, nodes[i], node, &set);
            if (nrc != 0) {
                cli_lib_error(cmd, nrc, "bad --node '%s'", nodes[i]);
                idm_layout_free(l);
                return CLI_USAGE;
            }
        }
    }
    uint64_t example = 0;
    int rc = idm_layout_compose(l, a.at, node, 0, &example);
    if (rc != 0) {
        cli_lib_error(cmd, rc, "cannot build the example id");
        idm_layout_free(l);
        return CLI_FAIL;
    }
    suggestion s;
    suggest(&f, a.have_workers, a.workers, a.have_peak, a.peak, &s);

    if (a.json)
        plan_json(l, &f, &a, now, example, &s);
    else
        plan_text(l, &f, &a, now, example, node, &s);
    idm_layout_free(l);
    return cli_output_status(cmd, 0);
}

/* ---- estimate ---- */

static const cli_opt estimate_options[] = {
    {"help", 'h', false, OPT_HELP},
    {"layout", 0, true, OPT_LAYOUT},
    {"epoch", 0, true, OPT_EPOCH},
    {"json", 0, false, OPT_JSON},
    {"rate", 0, true, OPT_RATE},
    {"processes", 0, true, OPT_PROCESSES},
    {"skew", 0, true, OPT_SKEW},
    {"surge", 0, true, OPT_SURGE},
    {"rows", 0, true, OPT_ROWS},
    {"indexes", 0, true, OPT_INDEXES},
    {NULL, 0, false, 0},
};

#define WARN_MAX 3
#define WARN_LEN 256

int cli_cmd_estimate(int argc, char **argv)
{
    const char *cmd = "estimate";
    cli_layout_args la = {NULL, NULL};
    bool json = false, have_rate = false, have_processes = false;
    bool have_rows = false, have_indexes = false;
    double rate = 0, skew = 1, surge = 2;
    uint64_t processes = 0, rows = 0, indexes = 1;

    cli_parser p;
    const char *v;
    int id;
    cli_parser_init(&p, cmd, estimate_options, argc, argv);
    while ((id = cli_next_opt(&p, &v)) != CLI_OPT_END) {
        int st = CLI_OK;
        switch (id) {
        case CLI_OPT_ERROR:
            return CLI_USAGE;
        case OPT_HELP:
            fputs(estimate_usage, stdout);
            return CLI_OK;
        case CLI_OPT_POS:
            cli_error(cmd, "unexpected argument '%s'", v);
            return CLI_USAGE;
        case OPT_LAYOUT:
            la.spec = v;
            break;
        case OPT_EPOCH:
            la.epoch = v;
            break;
        case OPT_JSON:
            json = true;
            break;
        case OPT_RATE:
            st = parse_decimal(cmd, "--rate", v, 0, true, RATE_MAX,
                               "above 0 and at most 1e12", &rate);
            have_rate = true;
            break;
        case OPT_PROCESSES:
            st = parse_whole(cmd, "--processes", v, 1, PROCESSES_MAX,
                             "1 to 10000000", &processes);
            have_processes = true;
            break;
        case OPT_SKEW:
            st = parse_decimal(cmd, "--skew", v, 1, false, SKEW_MAX,
                               "1 to 1e6", &skew);
            break;
        case OPT_SURGE:
            st = parse_decimal(cmd, "--surge", v, 1, false, SURGE_MAX,
                               "1 to 100", &surge);
            break;
        case OPT_ROWS:
            st = parse_whole(cmd, "--rows", v, 1, ROWS_MAX, "1 to 1e18",
                             &rows);
            have_rows = true;
            break;
        case OPT_INDEXES:
            st = parse_whole(cmd, "--indexes", v, 1, INDEXES_MAX,
                             "1 to 1000", &indexes);
            have_indexes = true;
            break;
        default:
            break;
        }
        if (st != CLI_OK)
            return st;
    }
    if (!have_rate) {
        cli_error(cmd, "missing --rate IDS_PER_S (the fleet's peak ids per "
                  "second)");
        return CLI_USAGE;
    }
    if (!have_processes) {
        cli_error(cmd, "missing --processes N (the processes minting ids)");
        return CLI_USAGE;
    }
    if (have_indexes && !have_rows) {
        cli_error(cmd, "--indexes needs --rows N");
        return CLI_USAGE;
    }

    idm_layout *l = NULL;
    int status = cli_build_layout(cmd, &la, &l);
    if (status != CLI_OK)
        return status;
    layout_facts f;
    get_facts(l, &f);
    idm_layout_free(l);

    double avg = rate / (double)processes;
    double busiest = avg * skew;
    double per_ms = busiest / 1000.0;
    double per_tick = per_ms * (double)f.tick_ms;
    double seq_pct = per_tick / f.per_tick * 100.0;
    /* processes x surge, rounded up (the small slack absorbs the binary
     * representation of decimal surges: 10 x 1.1 is 11, not 12). */
    double deploy_d = (double)processes * surge - 1e-9;
    uint64_t deploy = (uint64_t)deploy_d;
    if ((double)deploy < deploy_d)
        deploy++;
    if (deploy < processes)
        deploy = processes;
    double space = (double)f.worker_ids;
    double use_pct = (double)processes / space * 100.0;
    double deploy_pct = (double)deploy / space * 100.0;
    uint64_t per_index = rows * 8; /* rows <= 1e18: fits */
    double total = (double)per_index * (double)indexes;

    char warn[WARN_MAX][WARN_LEN];
    int nwarn = 0;
    char n1[64], n2[64], n3[64], n4[64];
    char span[64], buf[IDM_TIME_TEXT_MAX];
    cli_u64_dec(processes, n1);
    cli_u64_dec(f.worker_ids, n2);
    cli_u64_dec(deploy, n3);
    if (processes > f.worker_ids)
        snprintf(warn[nwarn++], WARN_LEN,
                 "warning: %s processes need more worker ids than the "
                 "layout's %s", n1, n2);
    else if (deploy > f.worker_ids)
        snprintf(warn[nwarn++], WARN_LEN,
                 "warning: during deploys %s processes hold worker ids, more "
                 "than the layout's %s", n3, n2);
    if (per_tick > f.per_tick)
        snprintf(warn[nwarn++], WARN_LEN,
                 "warning: the busiest process needs %s ids per %lld ms tick, "
                 "more than the sequence's %s: it will wait for the next tick",
                 fmt_num(per_tick, n4, sizeof n4), (long long)f.tick_ms,
                 fmt_num(f.per_tick, span, sizeof span));

    span_text(f.time_bits, f.tick_ms, span, sizeof span);
    if (json) {
        char t1[IDM_TIME_TEXT_MAX + 2];
        printf("{\"layout\":\"%s\",\"text\":\"%s\",\"tick_ms\":%lld",
               f.label, f.text, (long long)f.tick_ms);
        printf(",\"rate\":%s", fmt_num(rate, n4, sizeof n4));
        printf(",\"processes\":%s", n1);
        printf(",\"skew\":%s", fmt_num(skew, n4, sizeof n4));
        printf(",\"surge\":%s", fmt_num(surge, n4, sizeof n4));
        printf(",\"worker_ids\":%s,\"worker_ids_in_use\":%s,"
               "\"worker_ids_in_use_pct\":%.4g", n2, n1, use_pct);
        printf(",\"worker_ids_during_deploys\":%s,"
               "\"worker_ids_during_deploys_pct\":%.4g", n3, deploy_pct);
        printf(",\"average_ids_per_second\":%s",
               fmt_num(avg, n4, sizeof n4));
        printf(",\"busiest_ids_per_second\":%s",
               fmt_num(busiest, n4, sizeof n4));
        printf(",\"busiest_ids_per_ms\":%s", fmt_num(per_ms, n4, sizeof n4));
        printf(",\"busiest_ids_per_tick\":%s",
               fmt_num(per_tick, n4, sizeof n4));
        printf(",\"seq_per_tick\":%s,\"seq_share_pct\":%.4g",
               fmt_num(f.per_tick, n4, sizeof n4), seq_pct);
        printf(",\"time_bits\":%u,\"lifespan_years\":%.1f,"
               "\"time_end_ms\":%lld,\"time_end\":%s", f.time_bits,
               f.span_years, (long long)f.time_end,
               json_time(f.time_end, t1));
        if (have_rows) {
            cli_u64_dec(rows, n4);
            printf(",\"rows\":%s,\"indexes\":%llu", n4,
                   (unsigned long long)indexes);
            cli_u64_dec(per_index, n4);
            printf(",\"bytes_saved_per_index\":%s", n4);
            if (per_index <= UINT64_MAX / indexes) {
                cli_u64_dec(per_index * indexes, n4);
                printf(",\"bytes_saved_total\":%s", n4);
            } else {
                printf(",\"bytes_saved_total\":%.0f", total);
            }
        } else {
            printf(",\"rows\":null,\"indexes\":null,"
                   "\"bytes_saved_per_index\":null,"
                   "\"bytes_saved_total\":null");
        }
        printf(",\"warnings\":[");
        for (int i = 0; i < nwarn; i++)
            printf("%s\"%s\"", i > 0 ? "," : "", warn[i] + 9);
        printf("]}\n");
        return cli_output_status(cmd, 0);
    }

    printf("layout: %s (%s), tick %lld ms\n", f.label, f.text,
           (long long)f.tick_ms);
    printf("average process: %s ids/s (%s ids/s over %s processes)\n",
           fmt_num(avg, n4, sizeof n4), fmt_num(rate, span, sizeof span), n1);
    span_text(f.time_bits, f.tick_ms, span, sizeof span);
    {
        char a1[64], a2[64], a3[64], a4[64], a5[64];
        printf("busiest process: %s ids/s (skew x%s) = %s ids/ms; per %lld "
               "ms tick: %s of %s (%s of the sequence space)\n",
               fmt_num(busiest, a1, sizeof a1), fmt_num(skew, a2, sizeof a2),
               fmt_num(per_ms, a3, sizeof a3), (long long)f.tick_ms,
               fmt_num(per_tick, a4, sizeof a4),
               fmt_num(f.per_tick, n4, sizeof n4),
               fmt_pct(seq_pct, a5, sizeof a5));
        printf("worker ids in use: %s of %s (%s); during deploys (x%s): %s "
               "(%s)\n", n1, n2, fmt_pct(use_pct, a1, sizeof a1),
               fmt_num(surge, a3, sizeof a3), n3,
               fmt_pct(deploy_pct, a4, sizeof a4));
        printf("time field lifespan: %.1f years (%s), runs out %s\n",
               f.span_years, span, time_or_far(f.time_end, buf));
        if (have_rows) {
            cli_u64_dec(rows, a3);
            printf("index bytes saved against 128-bit keys: %s per index "
                   "(%s rows x 8 bytes); %s in all (%llu index%s)\n",
                   fmt_bytes((double)per_index, a1, sizeof a1), a3,
                   fmt_bytes(total, a2, sizeof a2),
                   (unsigned long long)indexes, indexes == 1 ? "" : "es");
        }
    }
    for (int i = 0; i < nwarn; i++)
        printf("%s\n", warn[i]);
    return cli_output_status(cmd, 0);
}
