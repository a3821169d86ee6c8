/* SPDX-License-Identifier: MIT */
/*
 * Layouts: parsing, validation, presets, and the pure arithmetic of ids
 * (decode, compose, time ranges). No clock and no state: everything here is
 * a function of the layout and its arguments.
 *
 * The time field must come first. Fields above it would break the one
 * property every layout promises: ids sort by time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "layout_internal.h"

typedef struct preset {
    const char *name;
    const char *text;
    idm_unix_ms epoch;
} preset;

/* Each preset as its own system publishes it: Twitter's snowflake
 * (IdWorker.scala: twepoch 1288834974657, 5+5 worker bits, 12 sequence),
 * Discord's developer docs (epoch 2015-01-01, internal worker and process
 * ids, increment), Instagram's PL/pgSQL next_id (epoch 1314220021721, 13
 * shard bits, sequence % 1024), Sonyflake (10 ms units from 2014-09-01,
 * 8 sequence bits above a 16-bit machine id). */
static const preset presets[] = {
    {"twitter", "time:41@1ms,datacenter:5,worker:5,seq:12", INT64_C(1288834974657)},
    {"discord", "time:42@1ms,worker:5,process:5,seq:12", INT64_C(1420070400000)},
    {"instagram", "time:41@1ms,shard:13,seq:10", INT64_C(1314220021721)},
    {"sonyflake", "time:39@10ms,seq:8,machine:16", INT64_C(1409529600000)},
};
static const char *const preset_names[] = {"twitter", "discord", "instagram", "sonyflake", NULL};

#define MAX_EPOCH INT64_C(253402300799999) /* 9999-12-31T23:59:59.999Z */

const char *const *idm_layout_preset_names(void)
{
    return preset_names;
}

static int valid_name(const char *s, size_t n)
{
    if (n == 0 || n > IDM_FIELD_NAME_MAX || s[0] < 'a' || s[0] > 'z')
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return 0;
    return 1;
}

/* Parse a small decimal in [s, s+n); -1 if malformed or above max. */
static long small_num(const char *s, size_t n, long max)
{
    long v = 0;
    if (n == 0 || n > 9)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v > max ? -1 : v;
}

/* "1ms", "10ms", "1s": the tick in ms, or -1. */
static int64_t parse_tick(const char *s, size_t n)
{
    size_t d = 0;
    long v;
    while (d < n && s[d] >= '0' && s[d] <= '9')
        d++;
    v = small_num(s, d, 1000000000);
    if (v < 0)
        return -1;
    if (n - d == 2 && memcmp(s + d, "ms", 2) == 0)
        return v;
    if (n - d == 1 && s[d] == 's')
        return (int64_t)v * 1000;
    return -1;
}

/* Fill in shifts and derived values once all fields are known. */
static int finish(idm_layout *l)
{
    unsigned total = 0;
    for (unsigned i = 0; i < l->nfields; i++)
        total += l->f[i].bits;
    if (total > 64)
        return idm__fail(IDM_ELAYOUT, "layout: fields use %u bits, more than 64", total);
    l->bits = total;
    unsigned pos = total;
    for (unsigned i = 0; i < l->nfields; i++) {
        pos -= l->f[i].bits;
        l->f[i].shift = pos;
        l->f[i].max = l->f[i].bits == 64 ? UINT64_MAX : (UINT64_C(1) << l->f[i].bits) - 1;
    }
    const struct idm__field *tf = &l->f[l->time_index];
    const struct idm__field *sf = &l->f[l->seq_index];
    l->time_bits = tf->bits;
    l->time_shift = tf->shift;
    l->seq_bits = sf->bits;
    l->seq_shift = sf->shift;
    l->max_tick = tf->max;
    /* The whole time field must map to an int64 Unix ms. */
    if (tf->bits >= 63 || (int64_t)tf->max > (INT64_MAX - l->epoch) / l->tick_ms - 1)
        return idm__fail(IDM_ELAYOUT,
                         "layout: a %u-bit time field of %lld ms ticks runs past what "
                         "64-bit milliseconds can count; use fewer time bits",
                         tf->bits, (long long)l->tick_ms);
    l->time_end = l->epoch + (int64_t)(tf->max + 1) * l->tick_ms;
    return 0;
}

/* The kind of field f, the next of l (at: its '@', if any, in the field's
 * text p of len bytes), and the tick for the time field. */
static int set_kind(idm_layout *l, struct idm__field *f, const char *p, size_t len,
                    const char *at)
{
    if (strcmp(f->name, "time") == 0) {
        size_t tlen;
        int64_t tick;
        if (l->nfields != 0)
            return idm__fail(IDM_ELAYOUT, "layout: the time field must come first (highest bits)");
        if (at == NULL)
            return idm__fail(IDM_ELAYOUT, "layout: the time field needs a tick, e.g. time:41@1ms");
        tlen = len - (size_t)(at + 1 - p);
        tick = parse_tick(at + 1, tlen);
        if (tick < 0)
            return idm__fail(IDM_ELAYOUT, "layout: bad tick '%.*s' (want e.g. 1ms, 10ms, 1s)",
                             (int)(tlen > 20 ? 20 : tlen), at + 1);
        if (tick < 1 || tick > IDM_TICK_MS_MAX)
            return idm__fail(IDM_ELAYOUT, "layout: tick of %lld ms is outside 1 ms to 60 s",
                             (long long)tick);
        l->tick_ms = tick;
        f->kind = IDM_FIELD_TIME;
        l->time_index = (int)l->nfields;
        return 0;
    }
    if (at != NULL)
        return idm__fail(IDM_ELAYOUT, "layout: only the time field takes a tick ('%s' has one)",
                         f->name);
    if (l->nfields == 0)
        return idm__fail(IDM_ELAYOUT, "layout: the time field must come first (highest bits), "
                                      "not '%s'", f->name);
    if (strcmp(f->name, "seq") == 0) {
        f->kind = IDM_FIELD_SEQ;
        l->seq_index = (int)l->nfields;
    } else {
        f->kind = IDM_FIELD_NODE;
    }
    return 0;
}

/* One field's text p (len bytes, up to the next comma) as the next field of
 * l; text is the whole layout, for messages. */
static int parse_field(idm_layout *l, const char *p, size_t len, const char *text)
{
    const char *colon = memchr(p, ':', len);
    const char *at;
    size_t nlen, blen;
    long bits;
    struct idm__field *f;
    int rc;

    if (len == 0)
        return idm__fail(IDM_ELAYOUT, "layout: empty field in '%.80s'", text);
    if (colon == NULL)
        return idm__fail(IDM_ELAYOUT, "layout: field '%.*s' has no ':bits'",
                         (int)(len > 40 ? 40 : len), p);
    nlen = (size_t)(colon - p);
    if (!valid_name(p, nlen))
        return idm__fail(IDM_ELAYOUT,
                         "layout: bad field name '%.*s' (want [a-z][a-z0-9_]*, at most %d bytes)",
                         (int)(nlen > 40 ? 40 : nlen), p, IDM_FIELD_NAME_MAX);
    if (l->nfields == IDM_LAYOUT_MAX_FIELDS)
        return idm__fail(IDM_ELAYOUT, "layout: more than %d fields", IDM_LAYOUT_MAX_FIELDS);
    f = &l->f[l->nfields];
    memcpy(f->name, p, nlen);
    f->name[nlen] = '\0';
    for (unsigned i = 0; i < l->nfields; i++)
        if (strcmp(l->f[i].name, f->name) == 0)
            return idm__fail(IDM_ELAYOUT, "layout: field '%s' repeats", f->name);

    at = memchr(colon + 1, '@', len - nlen - 1);
    blen = at != NULL ? (size_t)(at - colon - 1) : len - nlen - 1;
    bits = small_num(colon + 1, blen, 64);
    if (bits < 0)
        return idm__fail(IDM_ELAYOUT, "layout: field '%s' has bad width '%.*s' (want 1 to 64)",
                         f->name, (int)(blen > 20 ? 20 : blen), colon + 1);
    if (bits == 0)
        return idm__fail(IDM_ELAYOUT, "layout: field '%s' has zero width", f->name);
    f->bits = (unsigned)bits;
    rc = set_kind(l, f, p, len, at);
    if (rc == 0)
        l->nfields++;
    return rc;
}

static int parse_into(idm_layout *l, const char *text, idm_unix_ms epoch)
{
    const char *p = text;
    memset(l, 0, sizeof *l);
    l->time_index = l->seq_index = -1;
    snprintf(l->name, sizeof l->name, "custom");
    if (epoch < 0 || epoch > MAX_EPOCH)
        return idm__fail(IDM_ELAYOUT, "layout: epoch %lld is not a Unix ms from 1970 to 9999",
                         (long long)epoch);
    l->epoch = epoch;
    if (text == NULL || *text == '\0')
        return idm__fail(IDM_ELAYOUT, "layout: empty text (want e.g. time:41@1ms,worker:10,seq:12)");

    for (;;) {
        const char *end = strchr(p, ',');
        int rc = parse_field(l, p, end != NULL ? (size_t)(end - p) : strlen(p), text);
        if (rc != 0)
            return rc;
        if (end == NULL)
            break;
        p = end + 1;
        if (*p == '\0')
            return idm__fail(IDM_ELAYOUT, "layout: trailing comma in '%.80s'", text);
    }
    if (l->time_index < 0)
        return idm__fail(IDM_ELAYOUT, "layout: no time field (want e.g. time:41@1ms first)");
    if (l->seq_index < 0)
        return idm__fail(IDM_ELAYOUT, "layout: no seq field (want e.g. seq:12)");
    return finish(l);
}

int idm_layout_parse(idm_layout **out, const char *text, idm_unix_ms epoch)
{
    idm_layout *l;
    int rc;
    idm__clear_detail();
    if (out == NULL)
        return idm__fail(IDM_EINVAL, "layout: no output pointer");
    l = malloc(sizeof *l);
    if (l == NULL)
        return IDM_ENOMEM;
    rc = parse_into(l, text, epoch);
    if (rc != 0) {
        free(l);
        return rc;
    }
    *out = l;
    return 0;
}

static const preset *find_preset(const char *name)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

int idm_layout_preset(idm_layout **out, const char *name)
{
    const preset *ps;
    int rc;
    idm__clear_detail();
    if (out == NULL || name == NULL)
        return idm__fail(IDM_EINVAL, "layout: no preset name");
    ps = find_preset(name);
    if (ps == NULL)
        return idm__fail(IDM_ELAYOUT, "layout: unknown preset '%.40s' (presets: twitter, discord, "
                                      "instagram, sonyflake)", name);
    rc = idm_layout_parse(out, ps->text, ps->epoch);
    if (rc == 0)
        snprintf((*out)->name, sizeof (*out)->name, "%s", ps->name);
    return rc;
}

int idm_layout_from_spec(idm_layout **out, const char *spec, const char *epoch_text)
{
    idm_unix_ms epoch = 0;
    int rc;
    idm__clear_detail();
    if (out == NULL || spec == NULL)
        return idm__fail(IDM_EINVAL, "layout: no layout given");
    if (epoch_text != NULL) {
        rc = idm_time_parse(epoch_text, &epoch);
        if (rc != 0)
            return idm__fail(IDM_ELAYOUT, "layout: bad epoch: %s", idm_error_detail());
    }
    if (strchr(spec, ':') == NULL) {
        const preset *ps = find_preset(spec);
        if (ps == NULL)
            return idm__fail(IDM_ELAYOUT,
                             "layout: unknown layout '%.40s' (presets: twitter, discord, instagram, "
                             "sonyflake; or a text form like time:41@1ms,worker:10,seq:12)",
                             spec);
        if (epoch_text == NULL || epoch == ps->epoch)
            return idm_layout_preset(out, spec);
        /* Same fields, another epoch: no longer the preset itself ("custom"). */
        return idm_layout_parse(out, ps->text, epoch);
    }
    if (epoch_text == NULL)
        return idm__fail(IDM_ELAYOUT, "layout: a text layout needs an epoch (Unix ms or ISO-8601)");
    return idm_layout_parse(out, spec, epoch);
}

int idm_layout_dup(idm_layout **out, const idm_layout *l)
{
    idm_layout *c;
    if (out == NULL || l == NULL)
        return idm__fail(IDM_EINVAL, "layout: nothing to copy");
    c = malloc(sizeof *c);
    if (c == NULL)
        return IDM_ENOMEM;
    memcpy(c, l, sizeof *c);
    *out = c;
    return 0;
}

void idm_layout_free(idm_layout *l)
{
    free(l);
}

int idm_layout_format(const idm_layout *l, char *buf, size_t len)
{
    size_t off = 0;
    idm__clear_detail();
    if (l == NULL || buf == NULL || len == 0)
        return idm__fail(IDM_EINVAL, "layout: no buffer");
    buf[0] = '\0';
    for (unsigned i = 0; i < l->nfields; i++) {
        const struct idm__field *f = &l->f[i];
        int n;
        bool secs = l->tick_ms % 1000 == 0;
        if (f->kind == IDM_FIELD_TIME)
            n = snprintf(buf + off, len - off, "%s:%u@%lld%s", f->name, f->bits,
                         (long long)(secs ? l->tick_ms / 1000 : l->tick_ms), secs ? "s" : "ms");
        else
            n = snprintf(buf + off, len - off, ",%s:%u", f->name, f->bits);
        if (n < 0 || (size_t)n >= len - off)
            return idm__fail(IDM_EINVAL, "layout: buffer of %zu bytes too small", len);
        off += (size_t)n;
    }
    return 0;
}

const char *idm_layout_name(const idm_layout *l) { return l->name; }
idm_unix_ms idm_layout_epoch(const idm_layout *l) { return l->epoch; }
int64_t idm_layout_tick_ms(const idm_layout *l) { return l->tick_ms; }
unsigned idm_layout_bits(const idm_layout *l) { return l->bits; }
unsigned idm_layout_seq_bits(const idm_layout *l) { return l->seq_bits; }
size_t idm_layout_field_count(const idm_layout *l) { return l->nfields; }
idm_unix_ms idm_layout_time_end(const idm_layout *l) { return l->time_end; }

int idm_layout_field(const idm_layout *l, size_t index, idm_field_info *out)
{
    const struct idm__field *f;
    if (l == NULL || out == NULL || index >= l->nfields)
        return idm__fail(IDM_EINVAL, "layout: no field %zu", index);
    f = &l->f[index];
    out->name = f->name;
    out->kind = f->kind;
    out->bits = f->bits;
    out->shift = f->shift;
    out->max = f->max;
    return 0;
}

int idm_layout_field_index(const idm_layout *l, const char *name)
{
    if (l == NULL || name == NULL)
        return idm__fail(IDM_EINVAL, "layout: no field name");
    for (unsigned i = 0; i < l->nfields; i++)
        if (strcmp(l->f[i].name, name) == 0)
            return (int)i;
    return idm__fail(IDM_EINVAL, "layout: no field named '%.40s'", name);
}

bool idm_layout_sign_bit(const idm_layout *l, idm_unix_ms *from)
{
    if (l->bits < 64)
        return false;
    /* The time field is first, so bit 63 is its top bit. */
    if (from != NULL)
        *from = l->epoch + (int64_t)(UINT64_C(1) << (l->time_bits - 1)) * l->tick_ms;
    return true;
}

int idm_layout_decode(const idm_layout *l, uint64_t id, idm_decoded *out)
{
    idm__clear_detail();
    if (l == NULL || out == NULL)
        return idm__fail(IDM_EINVAL, "decode: no layout or output");
    if (l->bits < 64 && id >> l->bits != 0)
        return idm__fail(IDM_ERANGE, "decode: id %llu has bits above the layout's %u",
                         (unsigned long long)id, l->bits);
    memset(out, 0, sizeof *out);
    for (unsigned i = 0; i < l->nfields; i++)
        out->value[i] = (id >> l->f[i].shift) & l->f[i].max;
    out->tick = out->value[l->time_index];
    out->seq = out->value[l->seq_index];
    out->unix_ms = l->epoch + (int64_t)out->tick * l->tick_ms;
    return 0;
}

int idm_layout_compose(const idm_layout *l, idm_unix_ms t, const uint64_t *node, uint64_t seq,
                       uint64_t *id)
{
    uint64_t v, tick;
    idm__clear_detail();
    if (l == NULL || id == NULL)
        return idm__fail(IDM_EINVAL, "compose: no layout or output");
    if (t < l->epoch)
        return idm__fail(IDM_ERANGE, "compose: time %lld is before the epoch %lld", (long long)t,
                         (long long)l->epoch);
    if (t >= l->time_end)
        return idm__fail(IDM_ERANGE, "compose: time %lld is past the layout's end %lld",
                         (long long)t, (long long)l->time_end);
    if (seq > l->f[l->seq_index].max)
        return idm__fail(IDM_ERANGE, "compose: seq %llu exceeds %llu", (unsigned long long)seq,
                         (unsigned long long)l->f[l->seq_index].max);
    tick = (uint64_t)((t - l->epoch) / l->tick_ms);
    v = (tick << l->time_shift) | (seq << l->seq_shift);
    for (unsigned i = 0; i < l->nfields; i++) {
        const struct idm__field *f = &l->f[i];
        if (f->kind != IDM_FIELD_NODE || node == NULL)
            continue;
        if (node[i] > f->max)
            return idm__fail(IDM_ERANGE, "compose: %s %llu exceeds %llu", f->name,
                             (unsigned long long)node[i], (unsigned long long)f->max);
        v |= node[i] << f->shift;
    }
    *id = v;
    return 0;
}

int idm_layout_range(const idm_layout *l, idm_unix_ms from, idm_unix_ms to, uint64_t *min_id,
                     uint64_t *max_id)
{
    int64_t lo, hi;
    idm__clear_detail();
    if (l == NULL || min_id == NULL || max_id == NULL)
        return idm__fail(IDM_EINVAL, "range: no layout or output");
    if (from >= to)
        return idm__fail(IDM_ERANGE, "range: the window [%lld, %lld) is empty", (long long)from,
                         (long long)to);
    if (from < l->epoch)
        return idm__fail(IDM_ERANGE, "range: %lld is before the epoch %lld", (long long)from,
                         (long long)l->epoch);
    if (to > l->time_end)
        return idm__fail(IDM_ERANGE, "range: %lld is past the layout's end %lld", (long long)to,
                         (long long)l->time_end);
    /* First tick starting at or after from; first tick starting at or after to. */
    lo = (from - l->epoch + l->tick_ms - 1) / l->tick_ms;
    hi = (to - l->epoch + l->tick_ms - 1) / l->tick_ms;
    if (lo >= hi)
        return idm__fail(IDM_ERANGE, "range: no tick starts in [%lld, %lld)", (long long)from,
                         (long long)to);
    *min_id = (uint64_t)lo << l->time_shift;
    *max_id = ((uint64_t)(hi - 1) << l->time_shift) |
              (l->time_shift == 0 ? 0 : (UINT64_C(1) << l->time_shift) - 1);
    return 0;
}

int idm_layout_parse_node(const idm_layout *l, const char *assign, uint64_t *node, uint32_t *set)
{
    const char *eq;
    char name[IDM_FIELD_NAME_MAX + 1];
    size_t nlen;
    uint64_t v;
    int idx, rc;

    idm__clear_detail();
    if (l == NULL || assign == NULL || node == NULL || set == NULL)
        return idm__fail(IDM_EINVAL, "node: nothing to parse");
    eq = strchr(assign, '=');
    if (eq == NULL)
        return idm__fail(IDM_EPARSE, "node: '%.40s' is not name=value", assign);
    nlen = (size_t)(eq - assign);
    if (nlen == 0 || nlen > IDM_FIELD_NAME_MAX)
        return idm__fail(IDM_EPARSE, "node: '%.40s' has no field name before '='", assign);
    memcpy(name, assign, nlen);
    name[nlen] = '\0';
    for (idx = 0; idx < (int)l->nfields; idx++)
        if (strcmp(l->f[idx].name, name) == 0)
            break;
    if (idx == (int)l->nfields)
        return idm__fail(IDM_EINVAL, "node: the layout has no field '%s'", name);
    if (l->f[idx].kind != IDM_FIELD_NODE)
        return idm__fail(IDM_EINVAL, "node: '%s' is not a node field", name);
    rc = idm_u64_parse(eq + 1, &v);
    if (rc == IDM_ERANGE)
        return idm__fail(IDM_ERANGE, "node: %s value '%.40s' exceeds 64 bits", name, eq + 1);
    if (rc != 0)
        return idm__fail(IDM_EPARSE, "node: %s value '%.40s' is not an unsigned number", name, eq + 1);
    if (v > l->f[idx].max)
        return idm__fail(IDM_ERANGE, "node: %s=%llu exceeds %llu (%u bits)", name,
                         (unsigned long long)v, (unsigned long long)l->f[idx].max, l->f[idx].bits);
    node[idx] = v;
    *set |= UINT32_C(1) << idx;
    return 0;
}
