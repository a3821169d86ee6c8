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
 * Everything is checked before anything is printed. Powers of two come
 * from libm's ldexp, as in `idmint birthday` (the program links libm).
 *
 * Everything is printed through cli_out(): tools.c runs both commands
 * captured for idmintd, from several threads at once, so nothing here keeps
 * state between runs (tables are const, buffers on the stack) and nothing
 * reads the environment; plan's example id defaults to the time of the run.
 */
#include "cli.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
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
    return ldexp(1.0, (int)k);
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

/* ---- the options of both commands ---- */

enum {
    OPT_WORKERS = CLI_ID_OWN,
    OPT_PEAK,
    OPT_AT,
    OPT_RATE,
    OPT_PROCESSES,
    OPT_SKEW,
    OPT_SURGE,
    OPT_ROWS,
    OPT_INDEXES,
    OPT_END_
};
_Static_assert((int)OPT_END_ <= (int)CLI_ID_MAX, "too many options for cli_args");

/* The values of the numeric options, checked as they come. */
typedef struct num_args {
    uint64_t workers, processes, rows, indexes;
    double peak, rate, skew, surge;
} num_args;

/* A numeric option: a whole number (idm_u64_parse's syntax) or a decimal
 * one, within [min, max] (above min when min_open), kept at off. */
typedef struct num_opt {
    int id;
    const char *name;
    bool whole;
    bool min_open;
    double min, max;
    const char *range; /* for messages */
    size_t off;
} num_opt;

static const num_opt num_opts[] = {
    {OPT_WORKERS, "--workers", true, false, 1, (double)WORKERS_MAX, "1 to 4294967296",
     offsetof(num_args, workers)},
    {OPT_PEAK, "--peak", false, true, 0, RATE_MAX, "above 0 and at most 1e12",
     offsetof(num_args, peak)},
    {OPT_RATE, "--rate", false, true, 0, RATE_MAX, "above 0 and at most 1e12",
     offsetof(num_args, rate)},
    {OPT_PROCESSES, "--processes", true, false, 1, PROCESSES_MAX, "1 to 10000000",
     offsetof(num_args, processes)},
    {OPT_SKEW, "--skew", false, false, 1, SKEW_MAX, "1 to 1e6", offsetof(num_args, skew)},
    {OPT_SURGE, "--surge", false, false, 1, SURGE_MAX, "1 to 100", offsetof(num_args, surge)},
    {OPT_ROWS, "--rows", true, false, 1, (double)ROWS_MAX, "1 to 1e18",
     offsetof(num_args, rows)},
    {OPT_INDEXES, "--indexes", true, false, 1, INDEXES_MAX, "1 to 1000",
     offsetof(num_args, indexes)},
};

/* cli_spec.check: a numeric option's value into the num_args at ctx. */
static int check_num(void *ctx, const char *cmd, int id, const char *v)
{
    for (size_t i = 0; i < sizeof num_opts / sizeof num_opts[0]; i++) {
        const num_opt *o = &num_opts[i];
        if (o->id != id)
            continue;
        void *at = (char *)ctx + o->off;
        if (o->whole)
            return cli_parse_u64(cmd, o->name, v, (uint64_t)o->min, (uint64_t)o->max, o->range,
                               (uint64_t *)at);
        return parse_decimal(cmd, o->name, v, o->min, o->min_open, o->max, o->range,
                             (double *)at);
    }
    return CLI_OK;
}

static const cli_opt plan_options[] = {
    CLI_ROW_HELP,
    CLI_ROWS_LAYOUT,
    CLI_ROW_JSON,
    CLI_ROW_NODE,
    {"workers", 0, true, OPT_WORKERS},
    {"peak", 0, true, OPT_PEAK},
    {"at", 0, true, OPT_AT},
    CLI_ROW_END,
};

static const cli_spec plan_spec = {
    "plan", plan_usage, plan_options, 0, CLI_ID_NODE, IDM_LAYOUT_MAX_FIELDS, check_num,
};

static const cli_opt estimate_options[] = {
    CLI_ROW_HELP,
    CLI_ROWS_LAYOUT,
    CLI_ROW_JSON,
    {"rate", 0, true, OPT_RATE},
    {"processes", 0, true, OPT_PROCESSES},
    {"skew", 0, true, OPT_SKEW},
    {"surge", 0, true, OPT_SURGE},
    {"rows", 0, true, OPT_ROWS},
    {"indexes", 0, true, OPT_INDEXES},
    CLI_ROW_END,
};

static const cli_spec estimate_spec = {
    "estimate", estimate_usage, estimate_options, 0, 0, 0, check_num,
};

/* ---- plan ---- */

typedef struct plan_args {
    bool have_workers, have_peak;
    uint64_t workers;
    double peak;
    idm_unix_ms at; /* of the example id */
} plan_args;

/* The suggested layout: 63 bits, the given tick, node bits for the
 * workers, seq bits for the peak, the rest to time. */
typedef struct suggestion {
    bool fits;
    unsigned node_bits, seq_bits, time_bits;
    char text[IDM_LAYOUT_TEXT_MAX];
    idm_unix_ms time_end;
    double span_years;
} suggestion;

static void suggest(const layout_facts *f, const plan_args *a, suggestion *s)
{
    memset(s, 0, sizeof *s);
    /* Needs not stated keep the given layout's capacity. */
    s->node_bits = a->have_workers ? bits_for((double)a->workers)
                                   : (f->node_bits > 0 ? f->node_bits : 1);
    s->seq_bits = a->have_peak ? bits_for(a->peak * (double)f->tick_ms / 1000.0)
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

/* The text's first lines: the layout, when its time runs out, its worker
 * ids and its rates. */
static void text_capacity(const idm_layout *l, const layout_facts *f, const plan_args *a,
                          idm_unix_ms now)
{
    FILE *out = cli_out();
    char buf[IDM_TIME_TEXT_MAX], n1[64], n2[64], n3[64];
    char workers[CLI_U64_TEXT_MAX];
    fprintf(out, "layout: %s (%s), epoch %lld (%s), tick %lld ms\n", f->label,
            f->text, (long long)f->epoch, cli_time_or_far(f->epoch, buf),
            (long long)f->tick_ms);

    double left = ((double)f->time_end - (double)now) / MS_PER_YEAR;
    span_text(f->time_bits, f->tick_ms, n1, sizeof n1);
    if (cli_time_text(f->time_end, buf)) {
        if (now < f->time_end)
            fprintf(out, "time runs out: %s (year %.4s, %.1f years from now; the "
                    "field spans %.1f years, %s)\n", buf, buf, left,
                    f->span_years, n1);
        else
            fprintf(out, "time runs out: %s (year %.4s, RAN OUT %.1f years ago; "
                    "the field spans %.1f years, %s)\n", buf, buf, -left,
                    f->span_years, n1);
    } else {
        fprintf(out, "time runs out: after year 9999 (%.1f years from now; the "
                "field spans %.1f years, %s)\n", left, f->span_years, n1);
    }

    cli_u64_dec(f->worker_ids, workers);
    if (f->node_fields == 0) {
        fprintf(out, "worker ids available: 1 (no node fields: one generator "
                "per layout and epoch)\n");
    } else {
        fprintf(out, "worker ids available: %s (", workers);
        const char *sep = "";
        size_t count = idm_layout_field_count(l);
        for (size_t i = 0; i < count; i++) {
            idm_field_info fi;
            if (idm_layout_field(l, i, &fi) != 0 || fi.kind != IDM_FIELD_NODE)
                continue;
            fprintf(out, "%s%s %u bits", sep, fi.name, fi.bits);
            sep = " + ";
        }
        fprintf(out, " = 2^%u)\n", f->node_bits);
    }

    fprintf(out, "ids per second per worker: %s (%s per %lld ms tick)\n",
            fmt_num(f->per_second, n1, sizeof n1),
            fmt_num(f->per_tick, n2, sizeof n2), (long long)f->tick_ms);
    fprintf(out, "ids per second, whole fleet: %s (x %s worker ids available)\n",
            fmt_num(f->per_second * (double)f->worker_ids, n1, sizeof n1),
            workers);
    if (a->have_workers) {
        cli_u64_dec(a->workers, n3);
        fprintf(out, "ids per second, %s workers: %s (x %s)\n", n3,
                fmt_num(f->per_second * (double)a->workers, n1, sizeof n1),
                n3);
    }
}

/* When ids pass 2^53 and when they turn negative as signed integers. */
static void text_limits(const idm_layout *l, const layout_facts *f, idm_unix_ms now)
{
    FILE *out = cli_out();
    char buf[IDM_TIME_TEXT_MAX];
    idm_unix_ms from = 0;
    if (!over_53_from(f, &from)) {
        fprintf(out, "ids above 2^53: never (the layout uses %u bits): JSON "
                "numbers hold every id\n", f->bits);
    } else if (now >= from) {
        fprintf(out, "ids above 2^53: yes, since %s: JSON consumers must get ids "
                "as strings\n", cli_time_or_far(from, buf));
    } else {
        fprintf(out, "ids above 2^53: not yet; from %s (%.1f years from now): "
                "JSON consumers must get ids as strings\n",
                cli_time_or_far(from, buf),
                ((double)from - (double)now) / MS_PER_YEAR);
    }

    if (!idm_layout_sign_bit(l, &from)) {
        fprintf(out, "sign bit: not used: ids stay positive as signed 64-bit "
                "integers\n");
    } else if (now >= from) {
        fprintf(out, "sign bit: USED: ids read as signed 64-bit integers (Java "
                "long, SQL bigint) are negative since %s\n",
                cli_time_or_far(from, buf));
    } else {
        fprintf(out, "sign bit: USED: ids read as signed 64-bit integers (Java "
                "long, SQL bigint) turn negative from %s (%.1f years from "
                "now)\n", cli_time_or_far(from, buf),
                ((double)from - (double)now) / MS_PER_YEAR);
    }
}

/* The example id, its node values and its decode. */
static void text_example(const idm_layout *l, const plan_args *a, uint64_t id,
                         const uint64_t *node)
{
    FILE *out = cli_out();
    char buf[IDM_TIME_TEXT_MAX], idtext[CLI_U64_TEXT_MAX];
    cli_u64_dec(id, idtext);
    fprintf(out, "example id: %s (at %s,", idtext, cli_time_or_far(a->at, buf));
    size_t count = idm_layout_field_count(l);
    for (size_t i = 0; i < count; i++) {
        idm_field_info fi;
        if (idm_layout_field(l, i, &fi) == 0 && fi.kind == IDM_FIELD_NODE)
            fprintf(out, " %s=%llu", fi.name, (unsigned long long)node[i]);
    }
    fprintf(out, " seq=0)\n");
    idm_decoded d;
    if (idm_layout_decode(l, id, &d) == 0) {
        fputs("decoded: ", out);
        cli_print_decoded(out, l, id, &d, false);
    }
}

/* A verdict per stated need, and the suggested layout. */
static void text_verdicts(const layout_facts *f, const plan_args *a, idm_unix_ms now,
                          const suggestion *s)
{
    FILE *out = cli_out();
    char buf[IDM_TIME_TEXT_MAX], n1[64], n2[64];
    if (now < f->time_end)
        fprintf(out, "lifespan: ok (%.1f years left)\n",
                ((double)f->time_end - (double)now) / MS_PER_YEAR);
    else
        fprintf(out, "lifespan: RAN OUT (on %s)\n", cli_time_or_far(f->time_end, buf));
    if (a->have_workers) {
        cli_u64_dec(a->workers, n1);
        cli_u64_dec(f->worker_ids, n2);
        fprintf(out, "workers: %s (need %s, have %s)\n",
                a->workers <= f->worker_ids ? "ok" : "NOT ENOUGH", n1, n2);
    }
    if (a->have_peak)
        fprintf(out, "peak: %s (need %s ids/s per worker, the sequence gives %s)\n",
                a->peak <= f->per_second ? "ok" : "NOT COVERED",
                fmt_num(a->peak, n1, sizeof n1),
                fmt_num(f->per_second, n2, sizeof n2));

    if (!s->fits) {
        fprintf(out, "suggested layout: none: %u worker bits and %u sequence bits "
                "leave no time bits in 63\n", s->node_bits, s->seq_bits);
        return;
    }
    span_text(s->time_bits, f->tick_ms, n1, sizeof n1);
    if (now < s->time_end)
        snprintf(n2, sizeof n2, "%.1f years from now",
                 ((double)s->time_end - (double)now) / MS_PER_YEAR);
    else
        snprintf(n2, sizeof n2, "ALREADY RAN OUT: needs a later epoch");
    fprintf(out, "suggested layout: %s --epoch %lld (time runs out %s, %s; "
            "lifespan %.1f years, %s)\n", s->text, (long long)f->epoch,
            cli_time_or_far(s->time_end, buf), n2, s->span_years, n1);
}

/* The JSON object's members up to the example: capacity and limits. */
static void json_capacity(const idm_layout *l, const layout_facts *f, const plan_args *a,
                          idm_unix_ms now)
{
    FILE *out = cli_out();
    char t1[CLI_JSON_TIME_MAX], n1[64], n2[64];
    char num[CLI_U64_TEXT_MAX];
    double left = ((double)f->time_end - (double)now) / MS_PER_YEAR;

    fprintf(out, "{\"layout\":\"%s\",\"text\":\"%s\",\"epoch_ms\":%lld,"
            "\"epoch\":%s,\"tick_ms\":%lld", f->label, f->text,
            (long long)f->epoch, cli_json_time(f->epoch, t1),
            (long long)f->tick_ms);
    fprintf(out, ",\"time_end_ms\":%lld,\"time_end\":%s,\"years_left\":%.1f,"
            "\"span_years\":%.1f,\"time_bits\":%u", (long long)f->time_end,
            cli_json_time(f->time_end, t1), left, f->span_years, f->time_bits);
    cli_u64_dec(f->worker_ids, num);
    fprintf(out, ",\"node_bits\":%u,\"worker_ids\":%s,\"seq_bits\":%u,"
            "\"ids_per_tick\":%s,\"ids_per_second_per_worker\":%s",
            f->node_bits, num, f->seq_bits, fmt_num(f->per_tick, n1, sizeof n1),
            fmt_num(f->per_second, n2, sizeof n2));
    fprintf(out, ",\"ids_per_second_fleet\":%s",
            fmt_num(f->per_second * (double)f->worker_ids, n1, sizeof n1));
    if (a->have_workers)
        fprintf(out, ",\"ids_per_second_workers\":%s",
                fmt_num(f->per_second * (double)a->workers, n1, sizeof n1));
    else
        fprintf(out, ",\"ids_per_second_workers\":null");

    idm_unix_ms from = 0;
    if (over_53_from(f, &from))
        fprintf(out, ",\"over_2_53\":%s,\"over_2_53_from_ms\":%lld,"
                "\"over_2_53_from\":%s", now >= from ? "true" : "false",
                (long long)from, cli_json_time(from, t1));
    else
        fprintf(out, ",\"over_2_53\":false,\"over_2_53_from_ms\":null,"
                "\"over_2_53_from\":null");
    if (idm_layout_sign_bit(l, &from))
        fprintf(out, ",\"sign_bit\":true,\"negative_now\":%s,"
                "\"negative_from_ms\":%lld,\"negative_from\":%s",
                now >= from ? "true" : "false", (long long)from,
                cli_json_time(from, t1));
    else
        fprintf(out, ",\"sign_bit\":false,\"negative_now\":false,"
                "\"negative_from_ms\":null,\"negative_from\":null");
}

/* The verdicts, the needs and the suggestion, closing the object. */
static void json_verdicts(const layout_facts *f, const plan_args *a, idm_unix_ms now,
                          const suggestion *s)
{
    FILE *out = cli_out();
    char t1[CLI_JSON_TIME_MAX], n1[64];
    fprintf(out, ",\"verdicts\":{\"lifespan\":\"%s\"",
            now < f->time_end ? "ok" : "RAN OUT");
    if (a->have_workers)
        fprintf(out, ",\"workers\":\"%s\"",
                a->workers <= f->worker_ids ? "ok" : "NOT ENOUGH");
    if (a->have_peak)
        fprintf(out, ",\"peak\":\"%s\"",
                a->peak <= f->per_second ? "ok" : "NOT COVERED");
    fprintf(out, "}");
    if (a->have_workers)
        fprintf(out, ",\"workers_needed\":%llu", (unsigned long long)a->workers);
    else
        fprintf(out, ",\"workers_needed\":null");
    if (a->have_peak)
        fprintf(out, ",\"peak_needed\":%s", fmt_num(a->peak, n1, sizeof n1));
    else
        fprintf(out, ",\"peak_needed\":null");

    if (s->fits)
        fprintf(out, ",\"suggested\":{\"text\":\"%s\",\"epoch_ms\":%lld,"
                "\"time_bits\":%u,\"node_bits\":%u,\"seq_bits\":%u,"
                "\"time_end_ms\":%lld,\"time_end\":%s,\"years_left\":%.1f,"
                "\"span_years\":%.1f}}\n",
                s->text, (long long)f->epoch, s->time_bits, s->node_bits,
                s->seq_bits, (long long)s->time_end,
                cli_json_time(s->time_end, t1),
                ((double)s->time_end - (double)now) / MS_PER_YEAR,
                s->span_years);
    else
        fprintf(out, ",\"suggested\":null}\n");
}

static void plan_json(const idm_layout *l, const layout_facts *f,
                      const plan_args *a, idm_unix_ms now, uint64_t id,
                      const suggestion *s)
{
    FILE *out = cli_out();
    char t1[CLI_JSON_TIME_MAX];
    json_capacity(l, f, a, now);
    fprintf(out, ",\"example\":{\"id\":\"%llu\",\"at_ms\":%lld,\"at\":%s",
            (unsigned long long)id, (long long)a->at, cli_json_time(a->at, t1));
    idm_decoded d;
    if (idm_layout_decode(l, id, &d) == 0) {
        cli_print_time(out, d.unix_ms, true);
        cli_print_fields(out, l, &d, true);
    }
    fprintf(out, "}");
    json_verdicts(f, a, now, s);
}

/* The time of the example id: --at, else now, within the layout's time.
 * On failure prints why and returns CLI_USAGE. */
static int example_time(const char *at_text, const layout_facts *f, idm_unix_ms now,
                        idm_unix_ms *at)
{
    char b1[IDM_TIME_TEXT_MAX], b2[IDM_TIME_TEXT_MAX];
    *at = now;
    if (at_text != NULL) {
        int rc = idm_time_parse(at_text, at);
        if (rc != 0) {
            cli_lib_error("plan", rc, "bad --at '%s'", at_text);
            return CLI_USAGE;
        }
    }
    if (*at >= f->epoch && *at < f->time_end)
        return CLI_OK;
    bool before = *at < f->epoch;
    const char *rel = before ? "before" : "at or past", *bound = before ? "epoch" : "end";
    cli_time_or_far(before ? f->epoch : f->time_end, b1);
    if (at_text != NULL)
        cli_error("plan", "bad --at '%s': %s the layout's %s, %s", at_text, rel, bound, b1);
    else
        cli_error("plan", "now (%s) is %s the layout's %s, %s: give --at TIME for the example "
                  "id", cli_time_or_far(*at, b2), rel, bound, b1);
    return CLI_USAGE;
}

/* The example id of a->at: its node values are the --node values given
 * (the others 0), else example_nodes'. On failure prints why and returns
 * the exit status. */
static int example_id(const idm_layout *l, const cli_args *args, const plan_args *a,
                      uint64_t *node, uint64_t *id)
{
    example_nodes(l, node);
    if (args->list_count > 0) {
        uint32_t set = 0;
        memset(node, 0, sizeof(uint64_t) * IDM_LAYOUT_MAX_FIELDS);
        for (size_t i = 0; i < args->list_count; i++) {
            int rc = idm_layout_parse_node(l, args->list[i], node, &set);
            if (rc != 0) {
                cli_lib_error("plan", rc, "bad --node '%s'", args->list[i]);
                return CLI_USAGE;
            }
        }
    }
    int rc = idm_layout_compose(l, a->at, node, 0, id);
    if (rc != 0) {
        cli_lib_error("plan", rc, "cannot build the example id");
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* plan once the arguments are read: a checked, the layout built. */
static int run_plan(const cli_args *args, plan_args *a, const idm_layout *l)
{
    layout_facts f;
    get_facts(l, &f);
    idm_unix_ms now = now_ms();
    uint64_t node[IDM_LAYOUT_MAX_FIELDS], example = 0;
    int status = example_time(args->opt[OPT_AT], &f, now, &a->at);
    if (status == CLI_OK)
        status = example_id(l, args, a, node, &example);
    if (status != CLI_OK)
        return status;
    suggestion s;
    suggest(&f, a, &s);
    if (cli_given(args, CLI_ID_JSON)) {
        plan_json(l, &f, a, now, example, &s);
    } else {
        text_capacity(l, &f, a, now);
        text_limits(l, &f, now);
        text_example(l, a, example, node);
        text_verdicts(&f, a, now, &s);
    }
    return cli_output_status("plan", 0);
}

int cli_cmd_plan(int argc, char **argv)
{
    cli_args args;
    num_args n;
    memset(&n, 0, sizeof n);
    int status = cli_parse_args(&plan_spec, argc, argv, &args, &n);
    if (status != CLI_OK || args.help)
        return status;
    plan_args a = {cli_given(&args, OPT_WORKERS), cli_given(&args, OPT_PEAK), n.workers, n.peak,
                   0};
    idm_layout *l = NULL;
    status = cli_build_layout("plan", &args, &l);
    if (status != CLI_OK)
        return status;
    status = run_plan(&args, &a, l);
    idm_layout_free(l);
    return status;
}

/* ---- estimate ---- */

#define WARN_MAX 3
#define WARN_LEN 256

/* What estimate works out from its numbers and the layout's facts. */
typedef struct estimate {
    const num_args *n;
    bool have_rows;
    layout_facts f;
    double avg, busiest, per_ms, per_tick; /* ids per s, s, ms, tick */
    double seq_pct, use_pct, deploy_pct;
    uint64_t deploy;    /* worker ids held during deploys */
    uint64_t per_index; /* bytes saved per index */
    double total;       /* in all */
    char warn[WARN_MAX][WARN_LEN];
    int nwarn;
} estimate;

static void estimate_compute(estimate *e)
{
    const num_args *n = e->n;
    const layout_facts *f = &e->f;
    e->avg = n->rate / (double)n->processes;
    e->busiest = e->avg * n->skew;
    e->per_ms = e->busiest / 1000.0;
    e->per_tick = e->per_ms * (double)f->tick_ms;
    e->seq_pct = e->per_tick / f->per_tick * 100.0;
    /* processes x surge, rounded up (the small slack absorbs the binary
     * representation of decimal surges: 10 x 1.1 is 11, not 12). */
    double deploy_d = (double)n->processes * n->surge - 1e-9;
    e->deploy = (uint64_t)deploy_d;
    if ((double)e->deploy < deploy_d)
        e->deploy++;
    if (e->deploy < n->processes)
        e->deploy = n->processes;
    double space = (double)f->worker_ids;
    e->use_pct = (double)n->processes / space * 100.0;
    e->deploy_pct = (double)e->deploy / space * 100.0;
    e->per_index = n->rows * 8; /* rows <= 1e18: fits */
    e->total = (double)e->per_index * (double)n->indexes;

    char n1[CLI_U64_TEXT_MAX], n2[CLI_U64_TEXT_MAX], n3[CLI_U64_TEXT_MAX], n4[64], n5[64];
    cli_u64_dec(n->processes, n1);
    cli_u64_dec(f->worker_ids, n2);
    cli_u64_dec(e->deploy, n3);
    e->nwarn = 0;
    if (n->processes > f->worker_ids)
        snprintf(e->warn[e->nwarn++], WARN_LEN,
                 "warning: %s processes need more worker ids than the "
                 "layout's %s", n1, n2);
    else if (e->deploy > f->worker_ids)
        snprintf(e->warn[e->nwarn++], WARN_LEN,
                 "warning: during deploys %s processes hold worker ids, more "
                 "than the layout's %s", n3, n2);
    if (e->per_tick > f->per_tick)
        snprintf(e->warn[e->nwarn++], WARN_LEN,
                 "warning: the busiest process needs %s ids per %lld ms tick, "
                 "more than the sequence's %s: it will wait for the next tick",
                 fmt_num(e->per_tick, n4, sizeof n4), (long long)f->tick_ms,
                 fmt_num(f->per_tick, n5, sizeof n5));
}

/* ',"NAME":V' with V by fmt_num. */
static void json_num(const char *name, double v)
{
    FILE *out = cli_out();
    char buf[64];
    fprintf(out, ",\"%s\":%s", name, fmt_num(v, buf, sizeof buf));
}

/* ',"NAME":V' with V exact (cli_json_double). */
static void json_pct(const char *name, double v)
{
    FILE *out = cli_out();
    fprintf(out, ",\"%s\":", name);
    cli_json_double(out, v);
}

static void estimate_json(const estimate *e)
{
    FILE *out = cli_out();
    const num_args *n = e->n;
    const layout_facts *f = &e->f;
    char t1[CLI_JSON_TIME_MAX], num[CLI_U64_TEXT_MAX];
    fprintf(out, "{\"layout\":\"%s\",\"text\":\"%s\",\"tick_ms\":%lld",
            f->label, f->text, (long long)f->tick_ms);
    json_num("rate", n->rate);
    fprintf(out, ",\"processes\":%llu", (unsigned long long)n->processes);
    json_num("skew", n->skew);
    json_num("surge", n->surge);
    cli_u64_dec(f->worker_ids, num);
    /* The percentages exactly (json_pct): the text and the web console round
     * them by one rule (fmt_pct), so both read the same. */
    fprintf(out, ",\"worker_ids\":%s,\"worker_ids_in_use\":%llu", num,
            (unsigned long long)n->processes);
    json_pct("worker_ids_in_use_pct", e->use_pct);
    fprintf(out, ",\"worker_ids_during_deploys\":%llu", (unsigned long long)e->deploy);
    json_pct("worker_ids_during_deploys_pct", e->deploy_pct);
    json_num("average_ids_per_second", e->avg);
    json_num("busiest_ids_per_second", e->busiest);
    json_num("busiest_ids_per_ms", e->per_ms);
    json_num("busiest_ids_per_tick", e->per_tick);
    json_num("seq_per_tick", f->per_tick);
    json_pct("seq_share_pct", e->seq_pct);
    fprintf(out, ",\"time_bits\":%u,\"lifespan_years\":%.1f,"
            "\"time_end_ms\":%lld,\"time_end\":%s", f->time_bits,
            f->span_years, (long long)f->time_end, cli_json_time(f->time_end, t1));
    if (e->have_rows) {
        cli_u64_dec(n->rows, num);
        fprintf(out, ",\"rows\":%s,\"indexes\":%llu", num, (unsigned long long)n->indexes);
        cli_u64_dec(e->per_index, num);
        fprintf(out, ",\"bytes_saved_per_index\":%s", num);
        if (e->per_index <= UINT64_MAX / n->indexes) {
            cli_u64_dec(e->per_index * n->indexes, num);
            fprintf(out, ",\"bytes_saved_total\":%s", num);
        } else {
            fprintf(out, ",\"bytes_saved_total\":%.0f", e->total);
        }
    } else {
        fprintf(out, ",\"rows\":null,\"indexes\":null,"
                "\"bytes_saved_per_index\":null,"
                "\"bytes_saved_total\":null");
    }
    fprintf(out, ",\"warnings\":[");
    for (int i = 0; i < e->nwarn; i++)
        fprintf(out, "%s\"%s\"", i > 0 ? "," : "", e->warn[i] + 9);
    fprintf(out, "]}\n");
}

static void estimate_text(const estimate *e)
{
    FILE *out = cli_out();
    const num_args *n = e->n;
    const layout_facts *f = &e->f;
    char a1[64], a2[64], a3[64], a4[64], a5[64], span[64], buf[IDM_TIME_TEXT_MAX];
    char procs[CLI_U64_TEXT_MAX], ids[CLI_U64_TEXT_MAX];
    cli_u64_dec(n->processes, procs);
    cli_u64_dec(f->worker_ids, ids);
    fprintf(out, "layout: %s (%s), tick %lld ms\n", f->label, f->text, (long long)f->tick_ms);
    fprintf(out, "average process: %s ids/s (%s ids/s over %s processes)\n",
            fmt_num(e->avg, a1, sizeof a1), fmt_num(n->rate, a2, sizeof a2), procs);
    fprintf(out, "busiest process: %s ids/s (skew x%s) = %s ids/ms; per %lld "
            "ms tick: %s of %s (%s of the sequence space)\n",
            fmt_num(e->busiest, a1, sizeof a1), fmt_num(n->skew, a2, sizeof a2),
            fmt_num(e->per_ms, a3, sizeof a3), (long long)f->tick_ms,
            fmt_num(e->per_tick, a4, sizeof a4), fmt_num(f->per_tick, span, sizeof span),
            fmt_pct(e->seq_pct, a5, sizeof a5));
    fprintf(out, "worker ids in use: %s of %s (%s); during deploys (x%s): %llu "
            "(%s)\n", procs, ids, fmt_pct(e->use_pct, a1, sizeof a1),
            fmt_num(n->surge, a3, sizeof a3), (unsigned long long)e->deploy,
            fmt_pct(e->deploy_pct, a4, sizeof a4));
    span_text(f->time_bits, f->tick_ms, span, sizeof span);
    fprintf(out, "time field lifespan: %.1f years (%s), runs out %s\n",
            f->span_years, span, cli_time_or_far(f->time_end, buf));
    if (e->have_rows) {
        cli_u64_dec(n->rows, a3);
        fprintf(out, "index bytes saved against 128-bit keys: %s per index "
                "(%s rows x 8 bytes); %s in all (%llu index%s)\n",
                fmt_bytes((double)e->per_index, a1, sizeof a1), a3,
                fmt_bytes(e->total, a2, sizeof a2),
                (unsigned long long)n->indexes, n->indexes == 1 ? "" : "es");
    }
    for (int i = 0; i < e->nwarn; i++)
        fprintf(out, "%s\n", e->warn[i]);
}

/* The options estimate needs and the pairs it refuses; CLI_OK or CLI_USAGE
 * after printing why. */
static int estimate_check(const cli_args *args)
{
    const char *cmd = "estimate";
    if (!cli_given(args, OPT_RATE)) {
        cli_error(cmd, "missing --rate IDS_PER_S (the fleet's peak ids per "
                  "second)");
        return CLI_USAGE;
    }
    if (!cli_given(args, OPT_PROCESSES)) {
        cli_error(cmd, "missing --processes N (the processes minting ids)");
        return CLI_USAGE;
    }
    if (cli_given(args, OPT_INDEXES) && !cli_given(args, OPT_ROWS)) {
        cli_error(cmd, "--indexes needs --rows N");
        return CLI_USAGE;
    }
    return CLI_OK;
}

int cli_cmd_estimate(int argc, char **argv)
{
    cli_args args;
    num_args n = {0, 0, 0, 1, 0, 0, 1, 2}; /* indexes 1, skew 1, surge 2 */
    int status = cli_parse_args(&estimate_spec, argc, argv, &args, &n);
    if (status != CLI_OK || args.help)
        return status;
    if ((status = estimate_check(&args)) != CLI_OK)
        return status;
    idm_layout *l = NULL;
    status = cli_build_layout("estimate", &args, &l);
    if (status != CLI_OK)
        return status;
    estimate e;
    memset(&e, 0, sizeof e);
    e.n = &n;
    e.have_rows = cli_given(&args, OPT_ROWS);
    get_facts(l, &e.f);
    idm_layout_free(l);
    estimate_compute(&e);
    if (cli_given(&args, CLI_ID_JSON))
        estimate_json(&e);
    else
        estimate_text(&e);
    return cli_output_status("estimate", 0);
}
