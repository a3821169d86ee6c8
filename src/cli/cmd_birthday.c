/* SPDX-License-Identifier: MIT */
/*
 * `idmint birthday`: the chance that random ids collide (the birthday
 * bound). Two models:
 *
 *  - random: every id carries B random bits (UUIDv4: 122). With n ids,
 *    P = 1 - prod_{i<n} (1 - i/2^B); computed exactly (a sum of log1p
 *    terms) up to EXACT_MAX ids, else as -expm1(-n(n-1)/2 / 2^B).
 *  - per-ms: B random bits within each millisecond only (UUIDv7: 74,
 *    ULID: 80), so only ids of the same millisecond can collide. Ids arrive
 *    as a Poisson process of k = rate/1000 per ms: each of the 2^B values
 *    then gets a Poisson(k/2^B) number of ids independently, and a
 *    millisecond is free of collisions with probability
 *    exp(2^B (log1p(l) - l)), l = k/2^B (about exp(-k^2 / (2 * 2^B))).
 *    The first id comes at the start of a millisecond: a duration of
 *    j + f ms (0 <= f < 1) is j whole milliseconds and a part f of one, in
 *    which the ids (Poisson, k f of them on average) are all of one
 *    millisecond. So a duration under 1 ms is the plain birthday problem
 *    over the B bits, as the random model, not a fraction of a whole
 *    millisecond's chance (that would shrink with t, not t^2).
 *
 * Everything is computed in logarithms of P(no collision), so that tiny
 * probabilities keep their digits. --plot writes an SVG chart of P against
 * time for several widths, with no plotting library. --points N gives the
 * curve as numbers instead: P at N times log-spaced from 1 s to the
 * duration (what the web console's collision chart draws).
 *
 * The output goes through cli_out() (tools.c runs this command captured
 * for idmintd, from several threads at once: nothing here keeps state
 * between runs), and a captured run refuses --plot, which writes a file.
 */
#include "cli.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: idmint birthday --bits B --rate IDS_PER_S [--duration D]\n"
    "                       [--per-ms] [--points N] [--plot FILE.svg]\n"
    "                       [--json]\n"
    "\n"
    "The chance of any collision among random ids of B bits minted at a\n"
    "steady rate over a duration, and how long until it reaches 50% and one\n"
    "in a billion (1e-9).\n"
    "\n"
    "      --bits B           random bits per id, 1 to 256 (UUIDv4: 122;\n"
    "                         UUIDv7 per ms: 74; ULID per ms: 80)\n"
    "      --rate R           ids per second, above 0, at most 1e15\n"
    "      --duration D       how long, default 5y: a number of seconds or\n"
    "                         one with a unit s, m, h, d or y (365.25 d):\n"
    "                         3600, 90m, 30d, 5y; at most 10000y\n"
    "      --per-ms           the B bits are random within each millisecond\n"
    "                         only (ids of different ms never collide)\n"
    "      --points N         also give P at N times (2 to 500), log-spaced\n"
    "                         from 1 s to the duration, both included (from\n"
    "                         a thousandth of the duration when it is under\n"
    "                         1 s): a table, or \"points\": [[t_s, p], ...]\n"
    "      --plot FILE.svg    also write a chart of P against time for\n"
    "                         several widths at this rate\n"
    "      --json             one JSON object\n"
    "  -h, --help             show this help\n";

#define CMD "birthday"

enum { OPT_BITS = CLI_ID_OWN, OPT_RATE, OPT_DURATION, OPT_PER_MS, OPT_PLOT, OPT_POINTS };

static const cli_opt options[] = {
    CLI_ROW_HELP,
    {"bits", 0, true, OPT_BITS},
    {"rate", 0, true, OPT_RATE},
    {"duration", 0, true, OPT_DURATION},
    {"per-ms", 0, false, OPT_PER_MS},
    {"plot", 0, true, OPT_PLOT},
    {"points", 0, true, OPT_POINTS},
    CLI_ROW_JSON,
    CLI_ROW_END,
};

static const cli_spec spec = {CMD, usage_text, options, 0, 0, 0, NULL};
#define BITS_MAX 256
#define RATE_MAX 1e15
#define YEAR_S (365.25 * 86400.0)
#define DURATION_MAX_S (10000.0 * YEAR_S)
#define DURATION_DEFAULT_S (5.0 * YEAR_S)
/* Up to this many ids the random model uses the exact product. */
#define EXACT_MAX 1000000.0
/* The range of --points. */
#define POINTS_MIN 2
#define POINTS_MAX 500

/* ---- input ---- */

/* A plain decimal number (digits, one '.', an exponent), all of text. */
static bool parse_decimal(const char *text, size_t len, double *out)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return false;
    if (!(text[0] == '.' || (text[0] >= '0' && text[0] <= '9')))
        return false;
    for (size_t i = 0; i < len; i++) {
        if (strchr("0123456789.eE+-", text[i]) == NULL || text[i] == '\0')
            return false;
    }
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static int parse_bits(const char *text, int *bits)
{
    size_t len = strlen(text);
    bool digits = len > 0 && len <= 3;
    for (size_t i = 0; digits && i < len; i++)
        digits = text[i] >= '0' && text[i] <= '9';
    long v = digits ? strtol(text, NULL, 10) : 0;
    if (!digits || v < 1 || v > BITS_MAX) {
        cli_error(CMD, "bad --bits '%s': must be an integer from 1 to %d",
                  text, BITS_MAX);
        return CLI_USAGE;
    }
    *bits = (int)v;
    return CLI_OK;
}

static int parse_rate(const char *text, double *rate)
{
    double v;
    if (!parse_decimal(text, strlen(text), &v) || !(v > 0) || v > RATE_MAX) {
        cli_error(CMD, "bad --rate '%s': must be a number of ids per second "
                  "above 0 and at most 1e15", text);
        return CLI_USAGE;
    }
    *rate = v;
    return CLI_OK;
}

static int parse_duration(const char *text, double *seconds)
{
    size_t len = strlen(text);
    double mult = 1.0, v;
    if (len > 0) {
        switch (text[len - 1]) {
        case 's': mult = 1.0; len--; break;
        case 'm': mult = 60.0; len--; break;
        case 'h': mult = 3600.0; len--; break;
        case 'd': mult = 86400.0; len--; break;
        case 'y': mult = YEAR_S; len--; break;
        default: break;
        }
    }
    if (!parse_decimal(text, len, &v) || !(v * mult > 0) ||
        v * mult > DURATION_MAX_S) {
        cli_error(CMD, "bad --duration '%s': must be above 0 and at most "
                  "10000y, in seconds or with a unit s, m, h, d or y "
                  "(3600, 30d, 5y)", text);
        return CLI_USAGE;
    }
    *seconds = v * mult;
    return CLI_OK;
}

/* ---- the models ---- */

typedef struct model {
    int bits;
    bool per_ms;
    double rate; /* ids per second */
    double log_ms; /* per-ms: ln P(no collision in one whole ms), <= 0 */
} model;

/* Per-ms: ln P(no collision) among the ids of one millisecond, Poisson
 * with mean ids: 2^B * (log1p(l) - l), l = ids / 2^B. For small l the
 * series -l^2/2 + l^3/3 - l^4/4 avoids the cancellation. Decreases from 0
 * as ids grows. */
static double log_one_ms(int bits, double ids)
{
    double l = ldexp(ids, -bits);
    double d = l < 1e-4 ? l * l * (-0.5 + l * (1.0 / 3 - l * 0.25))
                        : log1p(l) - l;
    return ldexp(d, bits);
}

/* Per-ms: the mean number of ids in (a part of) one millisecond whose
 * ln P(no collision) is target, for log_one_ms(bits, k) <= target <= 0:
 * between 0 and k. Bisection: log_one_ms decreases, and its leading term
 * -ids^2 / 2^(B+1) gives a start below the answer. */
static double ids_for_log(int bits, double k, double target)
{
    double lo = 0.5 * sqrt(ldexp(-2.0 * target, bits)), hi = k;
    if (!(lo < hi))
        lo = 0;
    for (int i = 0; i < 2000; i++) {
        double mid = lo + (hi - lo) / 2;
        if (mid <= lo || mid >= hi)
            break;
        if (log_one_ms(bits, mid) > target)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

/* sum_{i<n} log1p(-i / 2^bits), advanced one id at a time. */
typedef struct exact_acc {
    int bits;
    double n;
    double sum;
} exact_acc;

static void acc_init(exact_acc *a, int bits)
{
    a->bits = bits;
    a->n = 0;
    a->sum = 0;
}

static void acc_advance(exact_acc *a, double n)
{
    double space = ldexp(1.0, a->bits);
    if (a->n > n)
        acc_init(a, a->bits);
    while (a->n < n) {
        if (a->n >= space) { /* more ids than values: a sure collision */
            a->sum = -INFINITY;
            a->n = n;
            break;
        }
        a->sum += log1p(-ldexp(a->n, -a->bits));
        a->n += 1;
    }
}

static void model_init(model *m, int bits, bool per_ms, double rate)
{
    m->bits = bits;
    m->per_ms = per_ms;
    m->rate = rate;
    m->log_ms = per_ms ? log_one_ms(bits, rate / 1000.0) : 0;
}

/* Whole ids minted in t seconds (a product within rounding of a whole
 * number counts as that number). */
static double ids_in(double rate, double t)
{
    double n = rate * t, r = nearbyint(n);
    if (fabs(n - r) <= 1e-9 * r)
        return r;
    return floor(n);
}

/* ln P(no collision) after t seconds; acc (random model) may be NULL. */
static double log_none(const model *m, double t, exact_acc *acc)
{
    if (m->per_ms) {
        /* j whole milliseconds, then a part f of one (see the top). */
        double ms = t * 1000.0, j = floor(ms), f = ms - j;
        return m->log_ms * j + log_one_ms(m->bits, m->rate / 1000.0 * f);
    }
    double n = ids_in(m->rate, t);
    if (n < 2)
        return 0;
    if (n <= EXACT_MAX) {
        exact_acc local;
        if (acc == NULL) {
            acc_init(&local, m->bits);
            acc = &local;
        }
        acc_advance(acc, n);
        return acc->sum;
    }
    if (n > ldexp(1.0, m->bits))
        return -INFINITY;
    return -ldexp(n * (n - 1) * 0.5, -m->bits);
}

/* The time (seconds) until P(collision) reaches p, and the ids by then. */
static void time_to(const model *m, double p, double *t, double *ids)
{
    double target = log1p(-p); /* ln P(no collision) to reach */
    if (m->per_ms) {
        /* Whole milliseconds while they stay above target, then the part
         * of the next one that gets there. */
        double k = m->rate / 1000.0, ms = INFINITY;
        if (m->log_ms < 0) {
            double j = floor(target / m->log_ms);
            double rest = target - j * m->log_ms; /* in (log_ms, 0] */
            if (!(rest < 0))
                ms = j; /* reached at the end of the j-th ms */
            else if (j >= ldexp(1.0, 52))
                ms = target / m->log_ms; /* a part of a ms is below rounding */
            else
                ms = j + ids_for_log(m->bits, k, rest) / k;
        }
        *t = ms / 1000.0;
        *ids = m->rate * *t;
        return;
    }
    double n = (1.0 + sqrt(1.0 + ldexp(8.0 * -target, m->bits))) / 2.0;
    if (n <= EXACT_MAX) {
        /* The first whole count whose exact product gets there. */
        exact_acc a;
        acc_init(&a, m->bits);
        double k = 2;
        for (;; k++) {
            acc_advance(&a, k);
            if (a.sum <= target)
                break;
        }
        n = k;
    }
    *ids = n;
    *t = n / m->rate;
}

/* ---- formatting ---- */

/* Drop the trailing zeros of a decimal fraction ("5.00" -> "5",
 * "1.50e+06" -> "1.5e+06"). */
static void strip_zeros(char *buf)
{
    char *dot = strchr(buf, '.');
    if (dot == NULL)
        return;
    char *exp = strchr(dot, 'e');
    char *end = exp != NULL ? exp : dot + strlen(dot);
    char *z = end;
    while (z > dot + 1 && z[-1] == '0')
        z--;
    if (z == dot + 1)
        z = dot;
    memmove(z, end, strlen(end) + 1);
}

/* Three significant digits (trailing zeros dropped), plain for 0.001 to
 * 999999, else in exponent form. */
static const char *fmt3(double v, char *buf, size_t len)
{
    double a = fabs(v);
    if (a >= 1e-3 && a < 999999.5) {
        int dec = 2 - (int)floor(log10(a));
        if (dec < 0)
            dec = 0;
        snprintf(buf, len, "%.*f", dec, v);
        /* rounding up may add a digit: 9.995 -> "10.00" */
        if (dec > 0 && fabs(strtod(buf, NULL)) >= pow(10.0, 3 - dec))
            snprintf(buf, len, "%.*f", dec - 1, v);
    } else if (v == 0) {
        snprintf(buf, len, "0");
    } else {
        snprintf(buf, len, "%.2e", v);
    }
    strip_zeros(buf);
    return buf;
}

/* A count: whole below a million, else %.2e. */
static const char *fmt_count(double v, char *buf, size_t len)
{
    if (v < 999999.5)
        snprintf(buf, len, "%.0f", v);
    else
        snprintf(buf, len, "%.2e", v);
    return buf;
}

/* A time in seconds, hours, days or years. */
static const char *fmt_time(double s, char *buf, size_t len)
{
    char num[48];
    if (!isfinite(s) || s > 1e300) {
        snprintf(buf, len, "never (more than 1e300 s)");
        return buf;
    }
    const char *unit;
    double v;
    if (s < 3600) {
        v = s;
        unit = "seconds";
    } else if (s < 86400) {
        v = s / 3600;
        unit = "hours";
    } else if (s < YEAR_S) {
        v = s / 86400;
        unit = "days";
    } else {
        v = s / YEAR_S;
        unit = "years";
    }
    fmt3(v, num, sizeof num);
    if (strcmp(num, "1") == 0)
        snprintf(buf, len, "1 %.*s", (int)strlen(unit) - 1, unit);
    else
        snprintf(buf, len, "%s %s", num, unit);
    return buf;
}

/* A JSON number: the shortest of %.15g..%.17g that reads back the same;
 * null when not finite. */
static void json_num(double v)
{
    cli_json_double(cli_out(), v);
}

static const char *model_label(const model *m, char *buf, size_t len)
{
    const char *known = "";
    if (!m->per_ms && m->bits == 122)
        known = " (UUIDv4)";
    else if (m->per_ms && m->bits == 74)
        known = " (UUIDv7)";
    else if (m->per_ms && m->bits == 80)
        known = " (ULID)";
    snprintf(buf, len, "%d bits%s%s", m->bits, m->per_ms ? " per ms" : "",
             known);
    return buf;
}

/* ---- the chart ---- */

#define SVG_W 900
#define SVG_H 560
#define PX0 90.0  /* plot area */
#define PX1 660.0
#define PY0 60.0
#define PY1 480.0
#define LOGP_MIN (-18.0)
#define T_MAX (100.0 * YEAR_S)
#define SAMPLES 240

static double x_of(double t)
{
    return PX0 + (PX1 - PX0) * log10(t) / log10(T_MAX);
}

static double y_of(double log10p)
{
    return PY0 + (PY1 - PY0) * (log10p / LOGP_MIN);
}

/* One model's line (dashed when per ms) and its legend row. */
static void svg_series(FILE *f, const model *m, const char *color, bool bold, int row)
{
    char label[64];
    model_label(m, label, sizeof label);
    exact_acc acc;
    acc_init(&acc, m->bits);

    /* P grows with t: the line starts where it enters the chart. */
    double t_in, ids_in_unused;
    time_to(m, 1e-18, &t_in, &ids_in_unused);
    if (!(t_in > 1.0))
        t_in = 1.0;
    bool drawn = t_in < T_MAX;
    if (drawn) {
        fprintf(f, "<path class=\"series\" d=\"");
        int points = 0;
        double last_lt = log10(t_in);
        for (int i = -1; i <= SAMPLES; i++) {
            double lt = i < 0 ? last_lt : log10(T_MAX) * i / SAMPLES;
            if (i >= 0 && lt <= last_lt)
                continue;
            double t = pow(10.0, lt);
            if (i == SAMPLES)
                t = T_MAX;
            double lp = log10(-expm1(log_none(m, t, &acc))); /* log10 P(collision) */
            if (!(lp >= LOGP_MIN)) /* below the chart, or P = 0 */
                continue;
            fprintf(f, "%s%.2f,%.2f", points == 0 ? "M" : " L", x_of(t),
                    y_of(lp > 0 ? 0 : lp));
            points++;
        }
        fprintf(f, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s>"
                "<title>%s</title></path>\n", color, bold ? "3" : "1.6",
                m->per_ms ? " stroke-dasharray=\"7,4\"" : "", label);
    }
    double ly = PY0 + 10 + 22.0 * row;
    fprintf(f, "<line x1=\"680\" y1=\"%.1f\" x2=\"712\" y2=\"%.1f\" "
            "stroke=\"%s\" stroke-width=\"%s\"%s/>\n", ly, ly, color,
            bold ? "3" : "1.6", m->per_ms ? " stroke-dasharray=\"7,4\"" : "");
    fprintf(f, "<text x=\"720\" y=\"%.1f\" class=\"legend\"%s>%s%s</text>\n",
            ly + 4, bold ? " font-weight=\"bold\"" : "", label,
            drawn ? "" : " (below 1e-18)");
}

/* The chart's frame: title, grid, ticks, reference lines, axes. */
static void svg_frame(FILE *f, const model *mine)
{
    static const struct {
        double t;
        const char *label;
    } xticks[] = {{1, "1 s"},           {60, "1 min"},
                  {3600, "1 h"},        {86400, "1 day"},
                  {30 * 86400.0, "30 days"}, {YEAR_S, "1 year"},
                  {10 * YEAR_S, "10 years"}, {100 * YEAR_S, "100 years"}};
    /* Reference lines: 50% and one in a billion. */
    static const struct {
        double log10p;
        const char *label;
    } refs[] = {{-0.30103, "50%"}, {-9, "1e-9"}};

    char rate[48];
    fmt3(mine->rate, rate, sizeof rate);
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
            "<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
            "\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
            "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n"
            "<title>Chance of an id collision at %s ids/s</title>\n"
            "<desc>Generated by idmint birthday: P(any collision) against "
            "time since the first id, log scales.</desc>\n"
            "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n"
            "<text x=\"%.1f\" y=\"30\" text-anchor=\"middle\" font-size=\"16\" "
            "font-weight=\"bold\">Chance of any id collision at %s ids/s</text>\n",
            SVG_W, SVG_H, SVG_W, SVG_H, rate, SVG_W, SVG_H, (PX0 + PX1) / 2,
            rate);

    /* Grid and y ticks: every decade a line, every third a label. */
    for (int d = 0; d >= (int)LOGP_MIN; d--) {
        double y = y_of(d);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" "
                "stroke=\"%s\" stroke-width=\"1\"/>\n", PX0, y, PX1, y,
                d % 3 == 0 ? "#cccccc" : "#eeeeee");
        if (d % 3 == 0) {
            char t[16];
            if (d == 0)
                snprintf(t, sizeof t, "1");
            else
                snprintf(t, sizeof t, "1e%d", d);
            fprintf(f, "<text x=\"%.1f\" y=\"%.2f\" text-anchor=\"end\">%s"
                    "</text>\n", PX0 - 6, y + 4, t);
        }
    }
    for (size_t i = 0; i < sizeof xticks / sizeof xticks[0]; i++) {
        double x = x_of(xticks[i].t);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" "
                "stroke=\"#cccccc\" stroke-width=\"1\"/>\n"
                "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                x, PY0, x, PY1, x, PY1 + 18, xticks[i].label);
    }
    for (size_t i = 0; i < 2; i++) {
        double y = y_of(refs[i].log10p);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" "
                "stroke=\"#555555\" stroke-width=\"1\" "
                "stroke-dasharray=\"2,3\"/>\n"
                "<text x=\"%.1f\" y=\"%.2f\" text-anchor=\"end\" "
                "fill=\"#555555\" font-size=\"10\">%s</text>\n",
                PX0, y, PX1, y, PX1 - 4, y - 3, refs[i].label);
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"none\" stroke=\"black\" stroke-width=\"1\"/>\n"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time since "
            "the first id (log scale)</text>\n"
            "<text x=\"20\" y=\"%.1f\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 20 %.1f)\">P(any collision) "
            "(log scale)</text>\n",
            PX0, PY0, PX1 - PX0, PY1 - PY0, (PX0 + PX1) / 2, PY1 + 42,
            (PY0 + PY1) / 2, (PY0 + PY1) / 2);
}

/* The series, then this run's model if it is not among them, and the
 * legend's notes. */
static void svg_all_series(FILE *f, const model *mine)
{
    static const struct {
        int bits;
        bool per_ms;
    } widths[] = {{32, false}, {48, false}, {64, false}, {80, false},
                  {96, false}, {122, false}, {74, true}};
    static const char *const colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c",
                                         "#d62728", "#9467bd", "#8c564b",
                                         "#e377c2", "#17becf"};
    char label[64];
    fprintf(f, "<g>\n");
    size_t nw = sizeof widths / sizeof widths[0];
    bool mine_listed = false;
    int row = 0;
    for (size_t i = 0; i < nw; i++) {
        model m;
        model_init(&m, widths[i].bits, widths[i].per_ms, mine->rate);
        bool is_mine = m.bits == mine->bits && m.per_ms == mine->per_ms;
        mine_listed = mine_listed || is_mine;
        svg_series(f, &m, colors[i], is_mine, row++);
    }
    if (!mine_listed)
        svg_series(f, mine, colors[nw], true, row++);
    fprintf(f, "</g>\n");
    fprintf(f, "<text x=\"680\" y=\"%.1f\" font-size=\"10\" fill=\"#555555\">"
            "dashed: random bits per ms</text>\n"
            "<text x=\"680\" y=\"%.1f\" font-size=\"10\" fill=\"#555555\">"
            "bold: %s</text>\n",
            PY0 + 10 + 22.0 * row + 6, PY0 + 10 + 22.0 * row + 22,
            model_label(mine, label, sizeof label));
    fprintf(f, "</svg>\n");
}

/* Write the chart to path (through path.tmp, renamed when complete). */
static int write_plot(const char *path, const model *mine)
{
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    if (tmp == NULL) {
        cli_error(CMD, "out of memory");
        return CLI_FAIL;
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        cli_error(CMD, "cannot write --plot '%s': %s", path, strerror(errno));
        free(tmp);
        return CLI_FAIL;
    }
    svg_frame(f, mine);
    svg_all_series(f, mine);

    int err = ferror(f) ? (errno != 0 ? errno : EIO) : 0;
    if (fclose(f) != 0 && err == 0)
        err = errno != 0 ? errno : EIO;
    if (err == 0 && rename(tmp, path) != 0)
        err = errno;
    if (err != 0) {
        cli_error(CMD, "cannot write --plot '%s': %s", path, strerror(err));
        remove(tmp);
        free(tmp);
        return CLI_FAIL;
    }
    free(tmp);
    return CLI_OK;
}

/* ---- the command ---- */

/* What one run works out. */
typedef struct result {
    model m;
    double duration, ids, prob;
    bool exact;
    double t50, n50, t9, n9;
    const char *plot;
    size_t npoints;             /* --points, 0 if not given */
    double pt[POINTS_MAX];      /* their times (s) */
    double pp[POINTS_MAX];      /* P(any collision) at each */
} result;

/* The options into r's model and duration; CLI_OK or CLI_USAGE after
 * printing why. */
static int read_args(const cli_args *a, result *r)
{
    const char *bits_text = a->opt[OPT_BITS], *rate_text = a->opt[OPT_RATE];
    if (bits_text == NULL || rate_text == NULL) {
        cli_error(CMD, "missing %s (try 'idmint birthday --help')",
                  bits_text == NULL && rate_text == NULL ? "--bits and --rate"
                  : bits_text == NULL                    ? "--bits"
                                                         : "--rate");
        return CLI_USAGE;
    }
    int bits;
    double rate;
    r->duration = DURATION_DEFAULT_S;
    int rc = parse_bits(bits_text, &bits);
    if (rc == CLI_OK)
        rc = parse_rate(rate_text, &rate);
    if (rc == CLI_OK && a->opt[OPT_DURATION] != NULL)
        rc = parse_duration(a->opt[OPT_DURATION], &r->duration);
    if (rc != CLI_OK)
        return rc;
    r->plot = a->opt[OPT_PLOT];
    if (r->plot != NULL && cli_captured()) {
        cli_error(CMD, "--plot writes a file: not available here");
        return CLI_USAGE;
    }
    if (r->plot != NULL && r->plot[0] == '\0') {
        cli_error(CMD, "bad --plot '': empty path");
        return CLI_USAGE;
    }
    r->npoints = 0;
    if (a->opt[OPT_POINTS] != NULL) {
        uint64_t n;
        _Static_assert(POINTS_MIN == 2 && POINTS_MAX == 500, "the range text spells them");
        rc = cli_parse_u64(CMD, "--points", a->opt[OPT_POINTS], POINTS_MIN, POINTS_MAX,
                           "2 to 500", &n);
        if (rc != CLI_OK)
            return rc;
        r->npoints = (size_t)n;
    }
    model_init(&r->m, bits, cli_given(a, OPT_PER_MS), rate);
    return CLI_OK;
}

/*
 * The --points curve: npoints times log-spaced from 1 s (a thousandth of
 * the duration when that is under 1 s) to the duration, the first and the
 * last exactly those, and P at each by log_none, as p_collision is (one
 * accumulator for the exact product: the times grow, so it only advances;
 * it sums the same terms in the same order as a fresh one, so the last P
 * is p_collision to the bit).
 */
static void compute_points(result *r)
{
    double t0 = r->duration >= 1.0 ? 1.0 : r->duration / 1000.0;
    double l0 = log(t0), l1 = log(r->duration);
    exact_acc acc;
    acc_init(&acc, r->m.bits);
    for (size_t i = 0; i < r->npoints; i++) {
        double t = exp(l0 + (l1 - l0) * (double)i / (double)(r->npoints - 1));
        if (i == 0)
            t = t0;
        else if (i + 1 == r->npoints)
            t = r->duration;
        else if (t > r->duration) /* rounding near the end */
            t = r->duration;
        double p = -expm1(log_none(&r->m, t, &acc));
        r->pt[i] = t;
        r->pp[i] = p == 0 ? 0 : p; /* not -0 */
    }
}

static void compute(result *r)
{
    const model *m = &r->m;
    r->ids = m->per_ms ? m->rate * r->duration : ids_in(m->rate, r->duration);
    r->prob = -expm1(log_none(m, r->duration, NULL));
    if (r->prob == 0)
        r->prob = 0; /* not -0 */
    r->exact = !m->per_ms && ids_in(m->rate, r->duration) <= EXACT_MAX;
    time_to(m, 0.5, &r->t50, &r->n50);
    time_to(m, 1e-9, &r->t9, &r->n9);
    compute_points(r);
}

/* ',"NAME":V' with V by json_num. */
static void json_member(const char *name, double v)
{
    FILE *out = cli_out();
    fprintf(out, ",\"%s\":", name);
    json_num(v);
}

static void print_json(const result *r)
{
    FILE *out = cli_out();
    fprintf(out, "{\"bits\":%d,\"model\":\"%s\",\"rate\":", r->m.bits,
            r->m.per_ms ? "per-ms" : "random");
    json_num(r->m.rate);
    json_member("duration_s", r->duration);
    json_member("ids", r->ids);
    json_member("p_collision", r->prob);
    fprintf(out, ",\"method\":\"%s\"",
            r->m.per_ms ? "poisson-per-ms" : r->exact ? "exact-product" : "approximation");
    json_member("t50_s", r->t50);
    json_member("t50_ids", r->n50);
    json_member("t1e9_s", r->t9);
    json_member("t1e9_ids", r->n9);
    if (r->plot != NULL) {
        /* the path, escaped as a JSON string */
        fputs(",\"plot\":\"", out);
        for (const unsigned char *s = (const unsigned char *)r->plot; *s != '\0'; s++) {
            if (*s == '"' || *s == '\\')
                fprintf(out, "\\%c", *s);
            else if (*s < 0x20)
                fprintf(out, "\\u%04x", *s);
            else
                fputc(*s, out);
        }
        fputc('"', out);
    }
    if (r->npoints > 0) {
        fputs(",\"points\":[", out);
        for (size_t i = 0; i < r->npoints; i++) {
            fputs(i == 0 ? "[" : ",[", out);
            json_num(r->pt[i]);
            fputc(',', out);
            json_num(r->pp[i]);
            fputc(']', out);
        }
        fputc(']', out);
    }
    fputs("}\n", out);
}

static void print_text(const result *r)
{
    FILE *out = cli_out();
    char a[64], b[64], c[64], label[64];
    fprintf(out, "bits:          %d\n", r->m.bits);
    if (r->m.per_ms)
        fprintf(out, "model:         per-ms: %s, random within each millisecond; "
                "Poisson arrivals\n", model_label(&r->m, label, sizeof label));
    else
        fprintf(out, "model:         random: %s per id\n",
                model_label(&r->m, label, sizeof label));
    fprintf(out, "rate:          %s ids/s\n", fmt3(r->m.rate, a, sizeof a));
    fprintf(out, "duration:      %s (%s s)\n", fmt_time(r->duration, a, sizeof a),
            fmt3(r->duration, b, sizeof b));
    fprintf(out, "ids in all:    %s\n", fmt_count(r->ids, a, sizeof a));
    if (r->prob > 0 && r->prob < 0.01)
        fprintf(out, "P(collision):  %.2e (1 in %s)\n", r->prob,
                fmt_count(1.0 / r->prob, b, sizeof b));
    else
        fprintf(out, "P(collision):  %.2e\n", r->prob);
    fprintf(out, "50%% after:     %s (%s ids)\n", fmt_time(r->t50, a, sizeof a),
            fmt_count(r->n50, c, sizeof c));
    fprintf(out, "1e-9 after:    %s (%s ids)\n", fmt_time(r->t9, a, sizeof a),
            fmt_count(r->n9, c, sizeof c));
    fprintf(out, "method:        %s\n",
            r->m.per_ms ? "1 - exp(j g(l) + g(f l)) over j + f ms, g(x) = 2^B "
                          "(log1p(x) - x), l = ids per ms / 2^B"
            : r->exact  ? "exact product 1 - prod_{i<n} (1 - i/2^B)"
                        : "1 - exp(-n(n-1)/2 / 2^B)");
    if (r->plot != NULL)
        fprintf(out, "plot:          %s\n", r->plot);
    if (r->npoints > 0) {
        fprintf(out, "points:\n  %-14s %s\n", "time (s)", "P(collision)");
        for (size_t i = 0; i < r->npoints; i++)
            fprintf(out, "  %-14s %.2e\n", fmt3(r->pt[i], a, sizeof a), r->pp[i]);
    }
}

int cli_cmd_birthday(int argc, char **argv)
{
    cli_args a;
    result r;
    int status = cli_parse_args(&spec, argc, argv, &a, NULL);
    if (status != CLI_OK || a.help)
        return status;
    if ((status = read_args(&a, &r)) != CLI_OK)
        return status;
    compute(&r);
    if (r.plot != NULL && (status = write_plot(r.plot, &r.m)) != CLI_OK)
        return status;
    if (cli_given(&a, CLI_ID_JSON))
        print_json(&r);
    else
        print_text(&r);
    return cli_output_status(CMD, 0);
}
