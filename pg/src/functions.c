/* SPDX-License-Identifier: MIT */
/*
 * The SQL functions of the idmint extension (pg/idmint--1.0.sql): minting
 * on the shared generators, and decoding with the server's layout or a
 * preset's. Every bad input is an ERROR with a SQLSTATE that names its kind
 * (22003 out of range, 22023 invalid parameter, 22P02 bad text, 55000 the
 * generator cannot mint now), never a wrong answer.
 */
#include "idmint_pg.h"
#include "common.h" /* the library's idm__url_mask */

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

PG_FUNCTION_INFO_V1(idmint_next);
PG_FUNCTION_INFO_V1(idmint_uuidv7);
PG_FUNCTION_INFO_V1(idmint_ulid);
PG_FUNCTION_INFO_V1(idmint_uuidv7_time);
PG_FUNCTION_INFO_V1(idmint_time);
PG_FUNCTION_INFO_V1(idmint_decode);
PG_FUNCTION_INFO_V1(idmint_lower_bound);
PG_FUNCTION_INFO_V1(idmint_status);

#define USEC_PER_MS INT64CONST(1000)
/* Unix ms of PostgreSQL's epoch, 2000-01-01. */
#define PG_EPOCH_UNIX_MS ((int64)(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * INT64CONST(86400000))

Datum idmint_next(PG_FUNCTION_ARGS)
{
    int slot;
    uint64_t id = 0;
    idm_snowflake *g = idmint_gen_enter("idmint_next", &slot);
    int rc = idm_snowflake_next(g, &id);
    idmint_gen_leave(slot);
    if (rc != 0)
        idmint_raise("idmint_next", rc);
    PG_RETURN_INT64((int64)id);
}

Datum idmint_uuidv7(PG_FUNCTION_ARGS)
{
    pg_uuid_t *out;
    idm_uuid u;
    int rc;
    idmint_require_preload("idmint_uuidv7");
    rc = idm_uuid7_next(idmint_sh->uuid7, &u);
    if (rc != 0)
        idmint_raise("idmint_uuidv7", rc);
    out = palloc(sizeof *out);
    memcpy(out->data, u.b, UUID_LEN);
    PG_RETURN_UUID_P(out);
}

Datum idmint_ulid(PG_FUNCTION_ARGS)
{
    char text[IDM_ULID_TEXT_MAX];
    idm_ulid u;
    int rc;
    idmint_require_preload("idmint_ulid");
    rc = idm_ulid_next(idmint_sh->ulid, &u);
    if (rc != 0)
        idmint_raise("idmint_ulid", rc);
    idm_ulid_format(&u, text);
    PG_RETURN_TEXT_P(cstring_to_text(text));
}

Datum idmint_uuidv7_time(PG_FUNCTION_ARGS)
{
    pg_uuid_t *in = PG_GETARG_UUID_P(0);
    idm_uuid u;
    idm_unix_ms ms;
    memcpy(u.b, in->data, UUID_LEN);
    if (idm_uuid7_time(&u, &ms) != 0)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("idmint_uuidv7_time: %s is not a UUIDv7 (version %d, variant %s)",
                        DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(in))),
                        idm_uuid_version(&u),
                        idm_uuid_variant(&u) == IDM_UUID_VARIANT_RFC ? "RFC 9562" : "not RFC 9562")));
    PG_RETURN_TIMESTAMPTZ(idmint_ms_to_ts(ms));
}

/* ------------------------------------------------------------- layouts */

/* The layout to decode with: the server's (arg NULL) or a preset's. */
static const idm_layout *layout_arg(FunctionCallInfo fcinfo, int argno, const char *fn)
{
    static idm_layout *presets[8];
    static char names[8][32];
    char err[512];
    char *name;
    int i;
    if (PG_NARGS() <= argno || PG_ARGISNULL(argno)) {
        const idm_layout *l = idmint_layout_load(err, sizeof err);
        if (l == NULL)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: the server's layout: %s", fn, err)));
        return l;
    }
    name = text_to_cstring(PG_GETARG_TEXT_PP(argno));
    for (i = 0; i < 8 && presets[i] != NULL; i++)
        if (strcmp(names[i], name) == 0)
            return presets[i];
    if (strlen(name) >= sizeof names[0] || i == 8 || idm_layout_preset(&presets[i], name) != 0) {
        StringInfoData all;
        const char *const *p = idm_layout_preset_names();
        initStringInfo(&all);
        for (; *p != NULL; p++)
            appendStringInfo(&all, "%s%s", all.len > 0 ? ", " : "", *p);
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: \"%s\" is not a layout preset", fn, name),
                        errhint("Give one of %s, or NULL for the server's idmint.layout.",
                                all.data)));
    }
    snprintf(names[i], sizeof names[i], "%s", name);
    return presets[i];
}

/* Decode id with l: an ERROR for a negative id or one with bits above the
 * layout. */
static void decode(const idm_layout *l, int64 id, idm_decoded *d, const char *fn)
{
    if (id < 0)
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("%s: id " INT64_FORMAT " is negative; idmint ids never are", fn,
                               id)));
    if (idm_layout_decode(l, (uint64_t)id, d) != 0)
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("%s: id " INT64_FORMAT " does not fit the layout: %s", fn, id,
                               idm_error_detail())));
}

Datum idmint_time(PG_FUNCTION_ARGS)
{
    const idm_layout *l;
    idm_decoded d;
    if (PG_ARGISNULL(0))
        PG_RETURN_NULL();
    l = layout_arg(fcinfo, 1, "idmint_time");
    decode(l, PG_GETARG_INT64(0), &d, "idmint_time");
    PG_RETURN_TIMESTAMPTZ(idmint_ms_to_ts(d.unix_ms));
}

/* The node fields of l whose bit is in set, {"name": value, ...}, as
 * jsonb. */
static Datum node_json(const idm_layout *l, const uint64 *values, uint32 set)
{
    StringInfoData s;
    initStringInfo(&s);
    appendStringInfoChar(&s, '{');
    for (size_t i = 0; i < idm_layout_field_count(l); i++) {
        idm_field_info fi;
        idm_layout_field(l, i, &fi);
        if (fi.kind == IDM_FIELD_NODE && (set & (UINT32_C(1) << i)))
            appendStringInfo(&s, "%s\"%s\": " UINT64_FORMAT, s.len > 1 ? ", " : "", fi.name,
                             values[i]);
    }
    appendStringInfoChar(&s, '}');
    return DirectFunctionCall1(jsonb_in, CStringGetDatum(s.data));
}

Datum idmint_decode(PG_FUNCTION_ARGS)
{
    const idm_layout *l;
    idm_decoded d;
    TupleDesc desc;
    Datum values[3];
    bool nulls[3] = {false, false, false};
    if (PG_ARGISNULL(0))
        PG_RETURN_NULL();
    l = layout_arg(fcinfo, 1, "idmint_decode");
    decode(l, PG_GETARG_INT64(0), &d, "idmint_decode");
    if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "idmint_decode: the return type must be a row type");
    values[0] = TimestampTzGetDatum(idmint_ms_to_ts(d.unix_ms));
    values[1] = node_json(l, d.value, UINT32_MAX);
    values[2] = Int64GetDatum((int64)d.seq);
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/*
 * The smallest id whose time is at or after ts: the first tick starting at
 * or after ts, shifted into place (node and sequence bits zero). Before the
 * epoch every id qualifies (0); past the layout's time, none can.
 */
Datum idmint_lower_bound(PG_FUNCTION_ARGS)
{
    const idm_layout *l;
    TimestampTz ts;
    int64 since_us, tick_us, tick;
    idm_field_info tf;
    uint64_t id = 0;
    if (PG_ARGISNULL(0))
        PG_RETURN_NULL();
    l = layout_arg(fcinfo, 1, "idmint_lower_bound");
    ts = PG_GETARG_TIMESTAMPTZ(0);
    if (TIMESTAMP_NOT_FINITE(ts))
        ereport(ERROR, (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
                        errmsg("idmint_lower_bound: an infinite time has no id")));
    /* In µs since the layout's epoch: ts is µs since 2000-01-01. */
    since_us = ts - (idm_layout_epoch(l) - PG_EPOCH_UNIX_MS) * USEC_PER_MS;
    if (since_us <= 0)
        PG_RETURN_INT64(0);
    tick_us = idm_layout_tick_ms(l) * USEC_PER_MS;
    tick = since_us / tick_us + (since_us % tick_us != 0);
    for (size_t i = 0; i < idm_layout_field_count(l); i++) {
        idm_layout_field(l, i, &tf);
        if (tf.kind == IDM_FIELD_TIME)
            break;
    }
    if ((uint64_t)tick > tf.max)
        ereport(ERROR,
                (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
                 errmsg("idmint_lower_bound: %s is past the end of the layout's time",
                        timestamptz_to_str(ts))));
    /* A 64-bit layout's later ids set bit 63: no bigint bound for them. */
    if ((uint64_t)tick > (uint64_t)INT64_MAX >> tf.shift)
        ereport(ERROR,
                (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
                 errmsg("idmint_lower_bound: %s is past the last time whose ids a bigint holds "
                        "in this layout (its ids set bit 63 from then on)",
                        timestamptz_to_str(ts))));
    id = (uint64_t)tick << tf.shift;
    PG_RETURN_INT64((int64)id);
}

/* ---------------------------------------------------------------- status */

static const char *state_name(idmint_gen_state st)
{
    switch (st) {
    case IDMINT_STARTING:
        return "starting";
    case IDMINT_READY:
        return "minting";
    case IDMINT_WAITING:
        return "waiting for the clock";
    case IDMINT_FAILED:
        return "failed (retrying)";
    case IDMINT_STOPPED:
        return "stopped";
    }
    return "unknown";
}

Datum idmint_status(PG_FUNCTION_ARGS)
{
    idmint_shared *sh;
    TupleDesc desc;
    Datum values[10];
    bool nulls[10];
    char msg[IDMINT_MESSAGE_MAX], lease_state[IDMINT_MESSAGE_MAX], layout_text[IDM_LAYOUT_TEXT_MAX];
    uint64 node[IDM_LAYOUT_MAX_FIELDS];
    uint32 node_set;
    idmint_gen_state st;
    StringInfoData full;
    idm_snowflake *g;
    int slot;
    idm_snowflake_stats stats;
    bool have_stats = false;
    char err[512];

    idmint_require_preload("idmint_status");
    if (!idmint_settings_load(err, sizeof err))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("idmint_status: %s", err)));
    sh = idmint_sh;
    if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "idmint_status: the return type must be a row type");
    memset(nulls, 0, sizeof nulls);

    SpinLockAcquire(&sh->mu);
    st = sh->state;
    memcpy(msg, sh->message, sizeof msg);
    memcpy(lease_state, sh->lease_state, sizeof lease_state);
    memcpy(node, sh->node, sizeof node);
    node_set = sh->node_set;
    SpinLockRelease(&sh->mu);
    if (node_set == 0) { /* no generator opened yet: the configured values */
        memcpy(node, idmint_cfg.node, sizeof node);
        node_set = idmint_cfg.node_set;
    }

    /* The counters of the generator in use, entered as a mint would. */
    if ((g = idmint_gen_try_enter(&slot)) != NULL) {
        idm_snowflake_stats_get(g, &stats);
        have_stats = true;
        idmint_gen_leave(slot);
    }

    idm_layout_format(idmint_cfg.layout, layout_text, sizeof layout_text);
    initStringInfo(&full);
    appendStringInfo(&full, "%s: %s", state_name(st), msg);

    values[0] = BoolGetDatum(st == IDMINT_READY && have_stats);
    values[1] = CStringGetTextDatum(layout_text);
    values[2] = TimestampTzGetDatum(idmint_ms_to_ts(idm_layout_epoch(idmint_cfg.layout)));
    values[3] = node_json(idmint_cfg.layout, node, node_set);
    if (idmint_cfg.lease_url != NULL) {
        char url[512];
        idm__url_mask(idmint_cfg.lease_url, url, sizeof url);
        values[4] = CStringGetTextDatum(url);
        values[5] = CStringGetTextDatum(lease_state[0] != '\0' ? lease_state : "not held");
    } else {
        nulls[4] = nulls[5] = true;
    }
    if (have_stats && stats.last_unix_ms > 0)
        values[6] = TimestampTzGetDatum(idmint_ms_to_ts(stats.last_unix_ms));
    else
        nulls[6] = true;
    if (have_stats && stats.state_mark_ms > 0)
        values[7] = TimestampTzGetDatum(idmint_ms_to_ts(stats.state_mark_ms));
    else
        nulls[7] = true;
    values[8] = Int64GetDatum(have_stats ? (int64)(stats.refused_backwards +
                                                   stats.refused_exhausted + stats.refused_lease)
                                         : 0);
    values[9] = CStringGetTextDatum(full.data);
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
