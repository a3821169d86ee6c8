/* SPDX-License-Identifier: MIT */
/*
 * The Node-API addon behind the npm package "idmint": libidmint's generators
 * in process. index.js checks and normalises options; this file turns them
 * into the library's calls and its errors into Error objects whose `code` is
 * the C error name (IDM_E...).
 *
 * Classes: Layout (decode, range), Generator (a Snowflake generator, plain or
 * leased), Sequence (a segment allocator). Functions: uuidv7, uuidv4, ulid,
 * objectId and their parsers, createSequence.
 */
#define NAPI_VERSION 8
#include <node_api.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <idmint/idmint.h>
#include <idmint/lease.h>
#include <idmint/leased.h>
#include <idmint/segment.h>

#define U64_TEXT_MAX 21
#define ARGS_MAX 4

/* ------------------------------------------------------------------ errors */

/* Throw an Error for a library failure: code IDM_..., the message and the
 * detail the failing call left on this thread. */
static void throw_idm(napi_env env, int err)
{
    char msg[768];
    const char *detail = idm_error_detail();
    if (detail && detail[0])
        snprintf(msg, sizeof msg, "idmint: %s: %s", idm_strerror(err), detail);
    else
        snprintf(msg, sizeof msg, "idmint: %s", idm_strerror(err));
    napi_throw_error(env, idm_err_name(err), msg);
}

/* Throw for bad JavaScript input, with the library's code for that kind. */
static void throw_arg(napi_env env, int err, const char *fmt, const char *what)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what);
    if (err == IDM_EINVAL)
        napi_throw_type_error(env, idm_err_name(err), msg);
    else
        napi_throw_range_error(env, idm_err_name(err), msg);
}

/* A napi call failed: an exception may be pending already (a getter threw);
 * if not, raise one so that the caller returns NULL with something thrown. */
static napi_value napi_failed(napi_env env)
{
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (!pending)
        napi_throw_error(env, "IDM_EINVAL", "idmint: a Node-API call failed");
    return NULL;
}

#define NAPI_OK(call)                    \
    do {                                 \
        if ((call) != napi_ok)           \
            return napi_failed(env);     \
    } while (0)

/* --------------------------------------------------------- value helpers */

/* v in decimal, ending just before end; returns where it starts. Two digits
 * a step: nextId's text is on the minting path, and snprintf took a quarter
 * of the call. */
static char *u64_dec(uint64_t v, char *end)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324"
                                "25262728293031323334353637383940414243444546474849"
                                "50515253545556575859606162636465666768697071727374"
                                "75767778798081828384858687888990919293949596979899";
    char *p = end;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        p -= 2;
        memcpy(p, pairs + 2 * r, 2);
    }
    if (v >= 10) {
        p -= 2;
        memcpy(p, pairs + 2 * v, 2);
    } else {
        *--p = (char)('0' + v);
    }
    return p;
}

static napi_value make_u64_string(napi_env env, uint64_t v)
{
    char buf[U64_TEXT_MAX];
    char *end = buf + sizeof buf, *p = u64_dec(v, end);
    napi_value out;
    if (napi_create_string_latin1(env, p, (size_t)(end - p), &out) != napi_ok)
        return napi_failed(env);
    return out;
}

static napi_value make_i64(napi_env env, int64_t v)
{
    napi_value out;
    if (napi_create_int64(env, v, &out) != napi_ok)
        return napi_failed(env);
    return out;
}

/* A Number while it is exact, a BigInt past 2^53 (a wide node field). */
static napi_value make_u64_number(napi_env env, uint64_t v)
{
    napi_value out;
    napi_status st = v <= (UINT64_C(1) << 53) ? napi_create_int64(env, (int64_t)v, &out)
                                               : napi_create_bigint_uint64(env, v, &out);
    if (st != napi_ok)
        return napi_failed(env);
    return out;
}

static napi_value make_date(napi_env env, int64_t ms)
{
    napi_value out;
    if (napi_create_date(env, (double)ms, &out) != napi_ok)
        return napi_failed(env);
    return out;
}

static napi_value make_buffer(napi_env env, const uint8_t *b, size_t n)
{
    napi_value out;
    if (napi_create_buffer_copy(env, n, b, NULL, &out) != napi_ok)
        return napi_failed(env);
    return out;
}

static napi_value make_string(napi_env env, const char *s)
{
    napi_value out;
    if (napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &out) != napi_ok)
        return napi_failed(env);
    return out;
}

static bool set_prop(napi_env env, napi_value obj, const char *name, napi_value v)
{
    return v && napi_set_named_property(env, obj, name, v) == napi_ok;
}

/* A string argument into a malloc'd buffer; NULL with an exception thrown
 * if it is not a string or holds a NUL (the C side would cut it short). */
static char *get_string(napi_env env, napi_value v, const char *what)
{
    napi_valuetype t;
    size_t len = 0;
    char *s;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_string) {
        throw_arg(env, IDM_EINVAL, "idmint: %s must be a string", what);
        return NULL;
    }
    if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) {
        napi_failed(env);
        return NULL;
    }
    s = malloc(len + 1);
    if (!s) {
        napi_throw_error(env, "IDM_ENOMEM", "idmint: out of memory");
        return NULL;
    }
    napi_get_value_string_utf8(env, v, s, len + 1, &len);
    if (strlen(s) != len) {
        free(s);
        throw_arg(env, IDM_EPARSE, "idmint: %s holds a NUL character", what);
        return NULL;
    }
    return s;
}

/* A property of an options object: NULL (no exception) when absent. */
static napi_value get_opt(napi_env env, napi_value obj, const char *name)
{
    napi_value v;
    napi_valuetype t;
    bool has = false;
    if (napi_has_named_property(env, obj, name, &has) != napi_ok || !has)
        return NULL;
    if (napi_get_named_property(env, obj, name, &v) != napi_ok)
        return NULL;
    if (napi_typeof(env, v, &t) != napi_ok || t == napi_undefined || t == napi_null)
        return NULL;
    return v;
}

/* An optional string option: 0 absent, 1 set (*out malloc'd), -1 thrown. */
static int opt_string(napi_env env, napi_value obj, const char *name, char **out)
{
    napi_value v = get_opt(env, obj, name);
    *out = NULL;
    if (!v)
        return 0;
    *out = get_string(env, v, name);
    return *out ? 1 : -1;
}

/* An optional integer option (index.js checks the types): 1 set, 0 absent. */
static int opt_int64(napi_env env, napi_value obj, const char *name, int64_t *out)
{
    napi_value v = get_opt(env, obj, name);
    if (!v || napi_get_value_int64(env, v, out) != napi_ok)
        return 0;
    return 1;
}

static bool opt_bool(napi_env env, napi_value obj, const char *name, bool dflt)
{
    napi_value v = get_opt(env, obj, name);
    bool b = dflt;
    if (v)
        napi_get_value_bool(env, v, &b);
    return b;
}

/*
 * An id argument: a decimal (or 0x hex) string, a BigInt from 0 to 2^64-1,
 * or a Number that is an exact non-negative integer. 0, or -1 thrown.
 */
static int get_id(napi_env env, napi_value v, uint64_t *out)
{
    napi_valuetype t;
    if (napi_typeof(env, v, &t) != napi_ok)
        return napi_failed(env), -1;
    if (t == napi_string) {
        char buf[40];
        size_t len = 0;
        int err;
        napi_get_value_string_utf8(env, v, buf, sizeof buf, &len);
        if (len >= sizeof buf - 1) {
            throw_arg(env, IDM_ERANGE, "idmint: %s is too long for a 64-bit id", "id");
            return -1;
        }
        if (strlen(buf) != len) {
            throw_arg(env, IDM_EPARSE, "idmint: %s holds a NUL character", "id");
            return -1;
        }
        err = idm_u64_parse(buf, out);
        if (err < 0) {
            throw_idm(env, err);
            return -1;
        }
        return 0;
    }
    if (t == napi_bigint) {
        int sign = 0;
        size_t words = 2;
        uint64_t w[2] = {0, 0};
        if (napi_get_value_bigint_words(env, v, &sign, &words, w) != napi_ok)
            return napi_failed(env), -1;
        if (sign || words > 1) {
            throw_arg(env, IDM_ERANGE, "idmint: %s must be a BigInt from 0 to 2^64-1", "id");
            return -1;
        }
        *out = w[0];
        return 0;
    }
    if (t == napi_number) {
        double d;
        napi_get_value_double(env, v, &d);
        /* Above 2^53 a Number is already rounded: the id it meant is lost. */
        if (!(d >= 0 && d <= 9007199254740991.0) || d != (double)(uint64_t)d) {
            throw_arg(env, IDM_ERANGE,
                      "idmint: %s as a Number must be an integer from 0 to 2^53-1 "
                      "(pass a string or a BigInt)", "id");
            return -1;
        }
        *out = (uint64_t)d;
        return 0;
    }
    throw_arg(env, IDM_EINVAL, "idmint: %s must be a string, a BigInt or a Number", "id");
    return -1;
}

/* A count argument for batches: 1 to max. */
static int get_count(napi_env env, napi_value v, uint32_t max, uint32_t *out)
{
    double d;
    napi_valuetype t;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_number) {
        throw_arg(env, IDM_EINVAL, "idmint: %s must be a Number", "the count");
        return -1;
    }
    napi_get_value_double(env, v, &d);
    if (!(d >= 1 && d <= max) || d != (double)(uint32_t)d) {
        char what[64];
        snprintf(what, sizeof what, "1 to %" PRIu32, max);
        throw_arg(env, IDM_ERANGE, "idmint: the count must be an integer from %s", what);
        return -1;
    }
    *out = (uint32_t)d;
    return 0;
}

static int get_i64_arg(napi_env env, napi_value v, const char *what, int64_t *out)
{
    napi_valuetype t;
    double d;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_number) {
        throw_arg(env, IDM_EINVAL, "idmint: %s must be a Number of ms", what);
        return -1;
    }
    napi_get_value_double(env, v, &d);
    if (!(d >= -9007199254740991.0 && d <= 9007199254740991.0) || d != (double)(int64_t)d) {
        throw_arg(env, IDM_ERANGE, "idmint: %s must be an integral time in ms", what);
        return -1;
    }
    *out = (int64_t)d;
    return 0;
}

/* ------------------------------------------------------------ layouts */

/* decode(id) on a layout: the id's time, tick, sequence and node fields. */
static napi_value layout_decode(napi_env env, const idm_layout *l, napi_value arg)
{
    uint64_t id;
    idm_decoded d;
    idm_field_info fi;
    napi_value out, fields;
    int err;
    if (get_id(env, arg, &id) < 0)
        return NULL;
    err = idm_layout_decode(l, id, &d);
    if (err < 0)
        return throw_idm(env, err), NULL;
    NAPI_OK(napi_create_object(env, &out));
    NAPI_OK(napi_create_object(env, &fields));
    for (size_t i = 0; i < idm_layout_field_count(l); i++) {
        if (idm_layout_field(l, i, &fi) == 0 && fi.kind == IDM_FIELD_NODE
            && !set_prop(env, fields, fi.name, make_u64_number(env, d.value[i])))
            return napi_failed(env);
    }
    if (!set_prop(env, out, "id", make_u64_string(env, id))
        || !set_prop(env, out, "time", make_date(env, d.unix_ms))
        || !set_prop(env, out, "unixMs", make_i64(env, d.unix_ms))
        || !set_prop(env, out, "tick", make_u64_number(env, d.tick))
        || !set_prop(env, out, "sequence", make_u64_number(env, d.seq))
        || !set_prop(env, out, "fields", fields))
        return napi_failed(env);
    return out;
}

static napi_value layout_to_date(napi_env env, const idm_layout *l, napi_value arg)
{
    uint64_t id;
    idm_decoded d;
    int err;
    if (get_id(env, arg, &id) < 0)
        return NULL;
    err = idm_layout_decode(l, id, &d);
    if (err < 0)
        return throw_idm(env, err), NULL;
    return make_date(env, d.unix_ms);
}

/* range(fromMs, toMs): [min, max] as decimal strings. */
static napi_value layout_range(napi_env env, const idm_layout *l, napi_value a, napi_value b)
{
    int64_t from, to;
    uint64_t lo, hi;
    napi_value out;
    int err;
    if (get_i64_arg(env, a, "from", &from) < 0 || get_i64_arg(env, b, "to", &to) < 0)
        return NULL;
    err = idm_layout_range(l, from, to, &lo, &hi);
    if (err < 0)
        return throw_idm(env, err), NULL;
    NAPI_OK(napi_create_array_with_length(env, 2, &out));
    NAPI_OK(napi_set_element(env, out, 0, make_u64_string(env, lo)));
    NAPI_OK(napi_set_element(env, out, 1, make_u64_string(env, hi)));
    return out;
}

/* What the layout is: for info() and index.d.ts's LayoutInfo. */
static napi_value layout_info(napi_env env, const idm_layout *l)
{
    char text[IDM_LAYOUT_TEXT_MAX];
    napi_value out, fields;
    idm_field_info fi;
    idm_layout_format(l, text, sizeof text);
    NAPI_OK(napi_create_object(env, &out));
    NAPI_OK(napi_create_array(env, &fields));
    for (size_t i = 0; i < idm_layout_field_count(l); i++) {
        napi_value f;
        if (idm_layout_field(l, i, &fi) != 0)
            continue;
        NAPI_OK(napi_create_object(env, &f));
        if (!set_prop(env, f, "name", make_string(env, fi.name))
            || !set_prop(env, f, "kind", make_string(env, fi.kind == IDM_FIELD_TIME ? "time"
                                                          : fi.kind == IDM_FIELD_SEQ ? "seq"
                                                                                     : "node"))
            || !set_prop(env, f, "bits", make_i64(env, fi.bits))
            || !set_prop(env, f, "shift", make_i64(env, fi.shift)))
            return napi_failed(env);
        NAPI_OK(napi_set_element(env, fields, (uint32_t)i, f));
    }
    if (!set_prop(env, out, "name", make_string(env, idm_layout_name(l)))
        || !set_prop(env, out, "text", make_string(env, text))
        || !set_prop(env, out, "epoch", make_i64(env, idm_layout_epoch(l)))
        || !set_prop(env, out, "tickMs", make_i64(env, idm_layout_tick_ms(l)))
        || !set_prop(env, out, "timeEnd", make_i64(env, idm_layout_time_end(l)))
        || !set_prop(env, out, "fields", fields))
        return napi_failed(env);
    return out;
}

/* Build a layout from opts.layout (preset or text form) and opts.epoch
 * (idm_time_parse text; index.js turns Dates and Numbers into it). */
static idm_layout *layout_from_opts(napi_env env, napi_value opts)
{
    char *spec = NULL, *epoch = NULL;
    idm_layout *l = NULL;
    int err;
    if (opt_string(env, opts, "layout", &spec) < 0 || opt_string(env, opts, "epoch", &epoch) < 0) {
        free(spec);
        return NULL;
    }
    err = idm_layout_from_spec(&l, spec ? spec : "twitter", epoch);
    free(spec);
    free(epoch);
    if (err < 0) {
        throw_idm(env, err);
        return NULL;
    }
    return l;
}

/* Fetch this and up to ARGS_MAX arguments; unwrap this into *self. */
static int this_args(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv,
                     void **self)
{
    napi_value that;
    size_t n = ARGS_MAX;
    napi_value tmp[ARGS_MAX];
    napi_get_undefined(env, &tmp[0]);
    for (size_t i = 0; i < ARGS_MAX; i++)
        tmp[i] = tmp[0];
    if (napi_get_cb_info(env, info, &n, tmp, &that, NULL) != napi_ok)
        return napi_failed(env), -1;
    if (argv)
        memcpy(argv, tmp, sizeof tmp);
    if (argc)
        *argc = n;
    if (self && napi_unwrap(env, that, self) != napi_ok) {
        napi_throw_type_error(env, "IDM_EINVAL", "idmint: not an idmint object");
        return -1;
    }
    return 0;
}

typedef struct js_layout {
    idm_layout *layout;
} js_layout;

static void layout_finalize(napi_env env, void *data, void *hint)
{
    js_layout *jl = data;
    (void)env;
    (void)hint;
    idm_layout_free(jl->layout);
    free(jl);
}

static napi_value Layout_new(napi_env env, napi_callback_info info)
{
    napi_value argv[ARGS_MAX], that;
    size_t n = ARGS_MAX;
    js_layout *jl;
    NAPI_OK(napi_get_cb_info(env, info, &n, argv, &that, NULL));
    if (n < 1)
        return throw_arg(env, IDM_EINVAL, "idmint: %s", "Layout needs an options object"), NULL;
    jl = calloc(1, sizeof *jl);
    if (!jl)
        return napi_throw_error(env, "IDM_ENOMEM", "idmint: out of memory"), NULL;
    jl->layout = layout_from_opts(env, argv[0]);
    if (!jl->layout) {
        free(jl);
        return NULL;
    }
    if (napi_wrap(env, that, jl, layout_finalize, NULL, NULL) != napi_ok) {
        layout_finalize(env, jl, NULL);
        return napi_failed(env);
    }
    return that;
}

static napi_value Layout_decode(napi_env env, napi_callback_info info)
{
    napi_value argv[ARGS_MAX];
    js_layout *jl;
    if (this_args(env, info, NULL, argv, (void **)&jl) < 0)
        return NULL;
    return layout_decode(env, jl->layout, argv[0]);
}

static napi_value Layout_idToDate(napi_env env, napi_callback_info info)
{
    napi_value argv[ARGS_MAX];
    js_layout *jl;
    if (this_args(env, info, NULL, argv, (void **)&jl) < 0)
        return NULL;
    return layout_to_date(env, jl->layout, argv[0]);
}

static napi_value Layout_range(napi_env env, napi_callback_info info)
{
    napi_value argv[ARGS_MAX];
    js_layout *jl;
    if (this_args(env, info, NULL, argv, (void **)&jl) < 0)
        return NULL;
    return layout_range(env, jl->layout, argv[0], argv[1]);
}

static napi_value Layout_info(napi_env env, napi_callback_info info)
{
    js_layout *jl;
    if (this_args(env, info, NULL, NULL, (void **)&jl) < 0)
        return NULL;
    return layout_info(env, jl->layout);
}

/* ---------------------------------------------------------- generators */

/* One generator: a plain Snowflake generator or a leased one. */
typedef struct js_gen {
    idm_snowflake *sf;
    idm_leased *leased;
    const idm_layout *layout; /* the generator's own */
    uint64_t *batch;          /* scratch for batches */
    size_t batch_cap;
    unsigned refs;            /* the object and its bound methods */
} js_gen;

static void gen_free(js_gen *g)
{
    if (g->leased)
        idm_leased_close(g->leased);
    if (g->sf)
        idm_snowflake_close(g->sf);
    free(g->batch);
    memset(g, 0, sizeof *g);
}

/* The finalizer of the object and of each of its bound methods (finalizers
 * run on the JavaScript thread): the last one closes the generator. */
static void gen_finalize(napi_env env, void *data, void *hint)
{
    js_gen *g = data;
    (void)env;
    (void)hint;
    if (--g->refs > 0)
        return;
    gen_free(g);
    free(g);
}

static int gen_mint(js_gen *g, uint64_t *id)
{
    if (g->sf)
        return idm_snowflake_next(g->sf, id);
    if (g->leased)
        return idm_leased_next(g->leased, id);
    return idm_error_fail(IDM_EINVAL, "generator: closed");
}

static int gen_mint_batch(js_gen *g, uint64_t *ids, size_t n)
{
    if (g->sf)
        return idm_snowflake_next_batch(g->sf, ids, n);
    if (g->leased)
        return idm_leased_next_batch(g->leased, ids, n);
    return idm_error_fail(IDM_EINVAL, "generator: closed");
}

/* Node values from opts.node: an object of name -> Number or decimal
 * string (index.js makes every value a string). */
static int gen_opts_node(napi_env env, napi_value opts, idm_snowflake_opts *so)
{
    napi_value node = get_opt(env, opts, "node"), names;
    uint32_t count = 0;
    if (!node)
        return 0;
    if (napi_get_property_names(env, node, &names) != napi_ok
        || napi_get_array_length(env, names, &count) != napi_ok)
        return napi_failed(env), -1;
    for (uint32_t i = 0; i < count; i++) {
        napi_value k, v;
        char *name, *val;
        uint64_t u;
        int err;
        if (napi_get_element(env, names, i, &k) != napi_ok
            || napi_get_property(env, node, k, &v) != napi_ok)
            return napi_failed(env), -1;
        name = get_string(env, k, "a node field's name");
        if (!name)
            return -1;
        val = get_string(env, v, "a node value");
        if (!val) {
            free(name);
            return -1;
        }
        err = idm_u64_parse(val, &u);
        if (err == 0)
            err = idm_snowflake_opts_node(so, name, u);
        free(name);
        free(val);
        if (err < 0)
            return throw_idm(env, err), -1;
    }
    return 0;
}

/* nextId and nextBigInt as the object's own functions holding the generator
 * as their data: a call then needs no unwrap of this (a lookup of a private
 * property, a sixth of the call). Each holds a reference to the generator, so
 * a method kept after its object is collected still mints, never touches
 * freed memory. */
static napi_value Generator_nextId_bound(napi_env env, napi_callback_info info);
static napi_value Generator_nextBigInt_bound(napi_env env, napi_callback_info info);

static int gen_bind_methods(napi_env env, napi_value that, js_gen *g)
{
    static const struct {
        const char *name;
        napi_callback fn;
    } bound[] = {{"nextId", Generator_nextId_bound}, {"nextBigInt", Generator_nextBigInt_bound}};
    for (size_t i = 0; i < sizeof bound / sizeof bound[0]; i++) {
        napi_value fn;
        napi_property_descriptor d = {bound[i].name, NULL, NULL, NULL, NULL, NULL, napi_default, NULL};
        if (napi_create_function(env, bound[i].name, NAPI_AUTO_LENGTH, bound[i].fn, g, &fn) != napi_ok
            || napi_add_finalizer(env, fn, g, gen_finalize, NULL, NULL) != napi_ok)
            return napi_failed(env), -1;
        g->refs++;
        d.value = fn;
        if (napi_define_properties(env, that, 1, &d) != napi_ok)
            return napi_failed(env), -1;
    }
    return 0;
}

static napi_value Generator_new(napi_env env, napi_callback_info info)
{
    napi_value argv[ARGS_MAX], that;
    size_t n = ARGS_MAX;
    idm_snowflake_opts so;
    idm_leased_opts lo;
    idm_layout *layout;
    char *lease = NULL, *field = NULL, *state = NULL, *state_dir = NULL, *holder = NULL;
    int64_t v;
    int err = 0;
    js_gen *g;

    NAPI_OK(napi_get_cb_info(env, info, &n, argv, &that, NULL));
    if (n < 1)
        return throw_arg(env, IDM_EINVAL, "idmint: %s", "Generator needs an options object"), NULL;
    layout = layout_from_opts(env, argv[0]);
    if (!layout)
        return NULL;
    idm_snowflake_opts_init(&so);
    so.layout = layout;
    if (gen_opts_node(env, argv[0], &so) < 0)
        goto thrown;
    if (opt_int64(env, argv[0], "backwards", &v))
        so.backwards = (idm_backwards_policy)v;
    if (opt_int64(env, argv[0], "exhaust", &v))
        so.exhaust = (idm_exhaust_policy)v;
    if (opt_int64(env, argv[0], "maxDriftMs", &v))
        so.max_drift_ms = v;
    if (opt_int64(env, argv[0], "maxWaitMs", &v))
        so.max_wait_ms = v;
    if (opt_int64(env, argv[0], "stateLookaheadMs", &v))
        so.state_lookahead_ms = v;
    if (opt_string(env, argv[0], "lease", &lease) < 0
        || opt_string(env, argv[0], "leaseField", &field) < 0
        || opt_string(env, argv[0], "state", &state) < 0
        || opt_string(env, argv[0], "stateDir", &state_dir) < 0
        || opt_string(env, argv[0], "holder", &holder) < 0)
        goto thrown;

    g = calloc(1, sizeof *g);
    if (!g) {
        napi_throw_error(env, "IDM_ENOMEM", "idmint: out of memory");
        goto thrown;
    }
    if (lease) {
        idm_leased_opts_init(&lo);
        lo.lease.url = lease;
        lo.lease.holder = holder;
        if (opt_int64(env, argv[0], "ttlMs", &v))
            lo.lease.ttl_ms = v;
        lo.gen = so;
        lo.field = field ? field : "worker";
        lo.state_dir = state_dir;
        lo.reclaim = opt_bool(env, argv[0], "reclaim", true);
        err = idm_leased_open(&g->leased, &lo);
        if (err == 0)
            g->layout = idm_leased_layout(g->leased);
    } else {
        so.state_path = state;
        so.state_fresh = opt_bool(env, argv[0], "stateFresh", false);
        err = idm_snowflake_open(&g->sf, &so);
        if (err == 0)
            g->layout = idm_snowflake_layout(g->sf);
    }
    if (err < 0) {
        throw_idm(env, err);
        free(g);
        goto thrown;
    }
    free(lease);
    free(field);
    free(state);
    free(state_dir);
    free(holder);
    idm_layout_free(layout);
    g->refs = 1;
    if (napi_wrap(env, that, g, gen_finalize, NULL, NULL) != napi_ok) {
        gen_finalize(env, g, NULL);
        return napi_failed(env);
    }
    if (gen_bind_methods(env, that, g) < 0)
        return NULL;
    return that;

thrown:
    free(lease);
    free(field);
    free(state);
    free(state_dir);
    free(holder);
    idm_layout_free(layout);
    return NULL;
}

/* The generator of this, or NULL with IDM_EINVAL thrown once closed. */
static js_gen *gen_this(napi_env env, napi_callback_info info, napi_value *argv)
{
    js_gen *g;
    if (this_args(env, info, NULL, argv, (void **)&g) < 0)
        return NULL;
    if (!g->sf && !g->leased) {
        napi_throw_error(env, "IDM_EINVAL", "idmint: the generator is closed");
        return NULL;
    }
    return g;
}

/* The bound methods' generator, or NULL with IDM_EINVAL thrown once closed. */
static js_gen *gen_data(napi_env env, napi_callback_info info)
{
    void *data = NULL;
    js_gen *g;
    if (napi_get_cb_info(env, info, NULL, NULL, NULL, &data) != napi_ok)
        return napi_failed(env), NULL;
    g = data;
    if (!g->sf && !g->leased) {
        napi_throw_error(env, "IDM_EINVAL", "idmint: the generator is closed");
        return NULL;
    }
    return g;
}

/* One id as a decimal string or a BigInt, from g (NULL: already thrown). */
static napi_value mint_text(napi_env env, js_gen *g)
{
    uint64_t id;
    int err;
    if (!g)
        return NULL;
    err = gen_mint(g, &id);
    if (err < 0)
        return throw_idm(env, err), NULL;
    return make_u64_string(env, id);
}

static napi_value mint_bigint(napi_env env, js_gen *g)
{
    uint64_t id;
    napi_value out;
    int err;
    if (!g)
        return NULL;
    err = gen_mint(g, &id);
    if (err < 0)
        return throw_idm(env, err), NULL;
    NAPI_OK(napi_create_bigint_uint64(env, id, &out));
    return out;
}

static napi_value Generator_nextId_bound(napi_env env, napi_callback_info info)
{
    return mint_text(env, gen_data(env, info));
}

static napi_value Generator_nextBigInt_bound(napi_env env, napi_callback_info info)
{
    return mint_bigint(env, gen_data(env, info));
}

static napi_value Generator_nextId(napi_env env, napi_callback_info info)
{
    return mint_text(env, gen_this(env, info, NULL));
}

static napi_value Generator_nextBigInt(napi_env env, napi_callback_info info)
{
    return mint_bigint(env, gen_this(env, info, NULL));
}

/* The most ids one batch call takes: batches run ahead of the clock as
 * exhaustion does, so a bigger one would only fail with IDM_EEXHAUSTED. */
#define BATCH_MAX 1000000u

static napi_value gen_batch(napi_env env, napi_callback_info info, bool bigint)
{
    napi_value argv[ARGS_MAX], out;
    js_gen *g = gen_this(env, info, argv);
    uint32_t n;
    int err;
    if (!g || get_count(env, argv[0], BATCH_MAX, &n) < 0)
        return NULL;
    if (g->batch_cap < n) {
        uint64_t *b = realloc(g->batch, n * sizeof *b);
        if (!b)
            return napi_throw_error(env, "IDM_ENOMEM", "idmint: out of memory"), NULL;
        g->batch = b;
        g->batch_cap = n;
    }
    err = gen_mint_batch(g, g->batch, n);
    if (err < 0)
        return throw_idm(env, err), NULL;
    NAPI_OK(napi_create_array_with_length(env, n, &out));
    for (uint32_t i = 0; i < n; i++) {
        napi_value v;
        if (bigint)
            NAPI_OK(napi_create_bigint_uint64(env, g->batch[i], &v));
        else if (!(v = make_u64_string(env, g->batch[i])))
            return NULL;
        NAPI_OK(napi_set_element(env, out, i, v));
    }
    return out;
}

static napi_value Generator_nextBatch(napi_env env, napi_callback_info info)
{
    return gen_batch(env, info, false);
}

static napi_value Generator_nextBigIntBatch(napi_env env, napi_callback_info info)
{
    return gen_batch(env, info, true);
}

static napi_value Generator_decode(napi_env env, napi_callback_info info)
{
    napi_value argv[ARGS_MAX];
    js_gen *g = gen_this(env, info, argv);
    return g ? layout_decode(env, g->layout, argv[0]) : NULL;
}

static napi_value Generator_idToDate(napi_env env, napi_callback_info info)
{
    napi_value argv[ARGS_MAX];
    js_gen *g = gen_this(env, info, argv);
    return g ? layout_to_date(env, g->layout, argv[0]) : NULL;
}

static napi_value Generator_range(napi_env env, napi_callback_info info)
{
    napi_value argv[ARGS_MAX];
    js_gen *g = gen_this(env, info, argv);
    return g ? layout_range(env, g->layout, argv[0], argv[1]) : NULL;
}

static napi_value Generator_info(napi_env env, napi_callback_info info)
{
    js_gen *g = gen_this(env, info, NULL);
    napi_value out;
    if (!g || !(out = layout_info(env, g->layout)))
        return NULL;
    if (g->leased) {
        idm_leased_status st;
        idm_leased_status_get(g->leased, &st);
        if (!set_prop(env, out, "leasedWorker", make_i64(env, st.worker))
            || !set_prop(env, out, "reclaims", make_i64(env, (int64_t)st.reclaims)))
            return napi_failed(env);
    }
    return out;
}

/* The generator's counters (idm_snowflake_stats), for health checks. */
static napi_value Generator_stats(napi_env env, napi_callback_info info)
{
    js_gen *g = gen_this(env, info, NULL);
    idm_snowflake_stats s;
    napi_value out;
    if (!g)
        return NULL;
    if (g->sf)
        idm_snowflake_stats_get(g->sf, &s);
    else
        idm_leased_stats_get(g->leased, &s);
    NAPI_OK(napi_create_object(env, &out));
    if (!set_prop(env, out, "refusedBackwards", make_i64(env, (int64_t)s.refused_backwards))
        || !set_prop(env, out, "refusedExhausted", make_i64(env, (int64_t)s.refused_exhausted))
        || !set_prop(env, out, "waits", make_i64(env, (int64_t)s.waits))
        || !set_prop(env, out, "aheadMints", make_i64(env, (int64_t)s.ahead_mints))
        || !set_prop(env, out, "maxBackwardsMs", make_i64(env, s.max_backwards_ms))
        || !set_prop(env, out, "lastUnixMs", make_i64(env, s.last_unix_ms))
        || !set_prop(env, out, "stateMarkMs", make_i64(env, s.state_mark_ms))
        || !set_prop(env, out, "stateWrites", make_i64(env, (int64_t)s.state_writes))
        || !set_prop(env, out, "refusedLease", make_i64(env, (int64_t)s.refused_lease)))
        return napi_failed(env);
    return out;
}

/* Close: store the state file's exact mark, release the lease. Idempotent. */
static napi_value Generator_close(napi_env env, napi_callback_info info)
{
    js_gen *g;
    napi_value undef;
    int err = 0;
    if (this_args(env, info, NULL, NULL, (void **)&g) < 0)
        return NULL;
    if (g->leased)
        err = idm_leased_close(g->leased);
    else if (g->sf)
        err = idm_snowflake_close(g->sf);
    g->leased = NULL;
    g->sf = NULL;
    g->layout = NULL;
    if (err < 0)
        return throw_idm(env, err), NULL;
    napi_get_undefined(env, &undef);
    return undef;
}

/* ------------------------------------------------------ 128-bit ids */

/* One generator of each kind per process, shared by every thread (they are
 * thread-safe, and one UUIDv7/ULID sequence keeps ids of all worker threads
 * ordered); the library reseeds them in a forked child. */
static idm_uuid7_gen *g_uuid7;
static idm_ulid_gen *g_ulid;
static idm_objectid_gen *g_oid;
static int g_init_err;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void gens_init(void)
{
    int err = idm_uuid7_gen_new(&g_uuid7, NULL, NULL);
    if (err == 0)
        err = idm_ulid_gen_new(&g_ulid, NULL, NULL, true);
    if (err == 0)
        err = idm_objectid_gen_new(&g_oid, NULL, NULL);
    g_init_err = err;
}

/* What a minting call gives JavaScript: its id's text (len characters), or
 * the error err thrown. */
static napi_value minted(napi_env env, int err, const char *text, size_t len)
{
    napi_value out;
    if (err < 0)
        return throw_idm(env, err), NULL;
    NAPI_OK(napi_create_string_latin1(env, text, len, &out));
    return out;
}

static napi_value js_uuidv7(napi_env env, napi_callback_info info)
{
    idm_uuid u;
    char text[IDM_UUID_TEXT_MAX];
    int err = idm_uuid7_next(g_uuid7, &u);
    (void)info;
    if (err == 0)
        idm_uuid_format(&u, text);
    return minted(env, err, text, 36);
}

static napi_value js_uuidv4(napi_env env, napi_callback_info info)
{
    idm_uuid u;
    char text[IDM_UUID_TEXT_MAX];
    int err = idm_uuid4(NULL, &u);
    (void)info;
    if (err == 0)
        idm_uuid_format(&u, text);
    return minted(env, err, text, 36);
}

static napi_value js_ulid(napi_env env, napi_callback_info info)
{
    idm_ulid u;
    char text[IDM_ULID_TEXT_MAX];
    int err = idm_ulid_next(g_ulid, &u);
    (void)info;
    if (err == 0)
        idm_ulid_format(&u, text);
    return minted(env, err, text, 26);
}

static napi_value js_objectId(napi_env env, napi_callback_info info)
{
    idm_objectid o;
    char text[IDM_OBJECTID_TEXT_MAX];
    int err = idm_objectid_next(g_oid, &o);
    (void)info;
    if (err == 0)
        idm_objectid_format(&o, text);
    return minted(env, err, text, 24);
}

/* The one text argument of a parser, into buf (too long: IDM_EPARSE). */
static int text_arg(napi_env env, napi_callback_info info, char *buf, size_t cap,
                    const char *what)
{
    napi_value argv[ARGS_MAX];
    napi_valuetype t;
    size_t len = 0;
    if (this_args(env, info, NULL, argv, NULL) < 0)
        return -1;
    if (napi_typeof(env, argv[0], &t) != napi_ok || t != napi_string) {
        throw_arg(env, IDM_EINVAL, "idmint: %s must be a string", what);
        return -1;
    }
    napi_get_value_string_utf8(env, argv[0], buf, cap, &len);
    if (len >= cap - 1 || strlen(buf) != len) {
        throw_arg(env, IDM_EPARSE, "idmint: %s has the wrong length", what);
        return -1;
    }
    return 0;
}

/* parseUuid(text): { version, variant, bytes, unixMs (v7 only, else null) }. */
static napi_value js_parseUuid(napi_env env, napi_callback_info info)
{
    char buf[64];
    idm_uuid u;
    idm_unix_ms ms;
    napi_value out, tv;
    int err;
    if (text_arg(env, info, buf, sizeof buf, "a UUID") < 0)
        return NULL;
    err = idm_uuid_parse(buf, &u);
    if (err < 0)
        return throw_idm(env, err), NULL;
    NAPI_OK(napi_create_object(env, &out));
    if (idm_uuid7_time(&u, &ms) == 0)
        tv = make_i64(env, ms);
    else
        NAPI_OK(napi_get_null(env, &tv));
    if (!set_prop(env, out, "version", make_i64(env, idm_uuid_version(&u)))
        || !set_prop(env, out, "variant", make_i64(env, idm_uuid_variant(&u)))
        || !set_prop(env, out, "bytes", make_buffer(env, u.b, 16))
        || !set_prop(env, out, "unixMs", tv))
        return napi_failed(env);
    return out;
}

/* parseUlid(text): { unixMs, bytes, uuid (the same 128 bits as a UUID) }. */
static napi_value js_parseUlid(napi_env env, napi_callback_info info)
{
    char buf[64], text[IDM_UUID_TEXT_MAX];
    idm_ulid u;
    idm_uuid as_uuid;
    napi_value out;
    int err;
    if (text_arg(env, info, buf, sizeof buf, "a ULID") < 0)
        return NULL;
    err = idm_ulid_parse(buf, &u);
    if (err < 0)
        return throw_idm(env, err), NULL;
    idm_ulid_to_uuid(&u, &as_uuid);
    idm_uuid_format(&as_uuid, text);
    NAPI_OK(napi_create_object(env, &out));
    if (!set_prop(env, out, "unixMs", make_i64(env, idm_ulid_time(&u)))
        || !set_prop(env, out, "bytes", make_buffer(env, u.b, 16))
        || !set_prop(env, out, "uuid", make_string(env, text)))
        return napi_failed(env);
    return out;
}

/* parseObjectId(text): { unixMs, bytes }. */
static napi_value js_parseObjectId(napi_env env, napi_callback_info info)
{
    char buf[64];
    idm_objectid o;
    napi_value out;
    int err;
    if (text_arg(env, info, buf, sizeof buf, "an ObjectId") < 0)
        return NULL;
    err = idm_objectid_parse(buf, &o);
    if (err < 0)
        return throw_idm(env, err), NULL;
    NAPI_OK(napi_create_object(env, &out));
    if (!set_prop(env, out, "unixMs", make_i64(env, idm_objectid_time(&o)))
        || !set_prop(env, out, "bytes", make_buffer(env, o.b, 12)))
        return napi_failed(env);
    return out;
}

/* parseTime(text): idm_time_parse's Unix ms, so epochs and range bounds
 * accept exactly the CLI's forms. */
static napi_value js_parseTime(napi_env env, napi_callback_info info)
{
    char buf[64];
    idm_unix_ms ms;
    int err;
    if (text_arg(env, info, buf, sizeof buf, "a time") < 0)
        return NULL;
    err = idm_time_parse(buf, &ms);
    if (err < 0)
        return throw_idm(env, err), NULL;
    return make_i64(env, ms);
}

/* A call into the addon that does nothing: the benchmark's floor for what
 * any function of a native addon costs before it does its work. */
static napi_value js_callFloor(napi_env env, napi_callback_info info)
{
    (void)env;
    (void)info;
    return NULL;
}

static napi_value js_presets(napi_env env, napi_callback_info info)
{
    const char *const *names = idm_layout_preset_names();
    napi_value out;
    (void)info;
    NAPI_OK(napi_create_array(env, &out));
    for (uint32_t i = 0; names[i]; i++)
        NAPI_OK(napi_set_element(env, out, i, make_string(env, names[i])));
    return out;
}

/* ------------------------------------------------- segment sequences */

typedef struct js_seq {
    idm_seq *seq;
    idm_store **stores;
    size_t nstores;
} js_seq;

static void seq_free(js_seq *q)
{
    if (q->seq)
        idm_seq_close(q->seq);
    for (size_t i = 0; i < q->nstores; i++)
        idm_store_close(q->stores[i]);
    free(q->stores);
    memset(q, 0, sizeof *q);
}

static void seq_finalize(napi_env env, void *data, void *hint)
{
    (void)env;
    (void)hint;
    seq_free(data);
    free(data);
}

/* Open every store of an array of URLs into q. 0, or -1 thrown. */
static int stores_open(napi_env env, napi_value arr, js_seq *q)
{
    uint32_t n = 0;
    bool is_arr = false;
    if (napi_is_array(env, arr, &is_arr) != napi_ok || !is_arr
        || napi_get_array_length(env, arr, &n) != napi_ok || n == 0) {
        throw_arg(env, IDM_EINVAL, "idmint: %s must be a non-empty array of URLs", "stores");
        return -1;
    }
    q->stores = calloc(n, sizeof *q->stores);
    if (!q->stores) {
        napi_throw_error(env, "IDM_ENOMEM", "idmint: out of memory");
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        napi_value v;
        char *url;
        int err;
        if (napi_get_element(env, arr, i, &v) != napi_ok)
            return napi_failed(env), -1;
        if (!(url = get_string(env, v, "a store URL")))
            return -1;
        err = idm_store_open(&q->stores[i], url);
        free(url);
        if (err < 0)
            return throw_idm(env, err), -1;
        q->nstores = i + 1;
    }
    return 0;
}

static napi_value Sequence_new(napi_env env, napi_callback_info info)
{
    napi_value argv[ARGS_MAX], that, stores;
    size_t n = ARGS_MAX;
    idm_seq_opts so;
    char *name = NULL, *floor_file = NULL;
    js_seq *q;
    int64_t v;
    int err;

    NAPI_OK(napi_get_cb_info(env, info, &n, argv, &that, NULL));
    q = calloc(1, sizeof *q);
    if (!q)
        return napi_throw_error(env, "IDM_ENOMEM", "idmint: out of memory"), NULL;
    if (n < 1 || opt_string(env, argv[0], "name", &name) <= 0) {
        if (n < 1 || !name)
            throw_arg(env, IDM_EINVAL, "idmint: %s", "a sequence needs a name");
        goto fail;
    }
    if (!(stores = get_opt(env, argv[0], "stores"))) {
        throw_arg(env, IDM_EINVAL, "idmint: %s", "a sequence needs stores: [url, ...]");
        goto fail;
    }
    if (stores_open(env, stores, q) < 0 || opt_string(env, argv[0], "floorFile", &floor_file) < 0)
        goto fail;
    idm_seq_opts_init(&so);
    so.name = name;
    so.stores = q->stores;
    so.nstores = q->nstores;
    so.floor_file = floor_file;
    if (opt_int64(env, argv[0], "minBlock", &v))
        so.min_block = v;
    if (opt_int64(env, argv[0], "maxBlock", &v))
        so.max_block = v;
    if (opt_int64(env, argv[0], "waitMs", &v))
        so.wait_ms = v;
    err = idm_seq_open(&q->seq, &so);
    if (err < 0) {
        throw_idm(env, err);
        goto fail;
    }
    free(name);
    free(floor_file);
    if (napi_wrap(env, that, q, seq_finalize, NULL, NULL) != napi_ok) {
        seq_finalize(env, q, NULL);
        return napi_failed(env);
    }
    return that;
fail:
    free(name);
    free(floor_file);
    seq_finalize(env, q, NULL);
    return NULL;
}

static js_seq *seq_this(napi_env env, napi_callback_info info)
{
    js_seq *q;
    if (this_args(env, info, NULL, NULL, (void **)&q) < 0)
        return NULL;
    if (!q->seq) {
        napi_throw_error(env, "IDM_EINVAL", "idmint: the sequence is closed");
        return NULL;
    }
    return q;
}

static napi_value seq_next(napi_env env, napi_callback_info info, bool bigint)
{
    js_seq *q = seq_this(env, info);
    int64_t id;
    napi_value out;
    int err;
    if (!q)
        return NULL;
    err = idm_seq_next(q->seq, &id);
    if (err < 0)
        return throw_idm(env, err), NULL;
    if (!bigint)
        return make_u64_string(env, (uint64_t)id);
    NAPI_OK(napi_create_bigint_int64(env, id, &out));
    return out;
}

static napi_value Sequence_next(napi_env env, napi_callback_info info)
{
    return seq_next(env, info, false);
}

static napi_value Sequence_nextBigInt(napi_env env, napi_callback_info info)
{
    return seq_next(env, info, true);
}

static napi_value Sequence_stats(napi_env env, napi_callback_info info)
{
    js_seq *q = seq_this(env, info);
    idm_seq_stats s;
    napi_value out;
    if (!q)
        return NULL;
    idm_seq_stats_get(q->seq, &s);
    NAPI_OK(napi_create_object(env, &out));
    if (!set_prop(env, out, "ids", make_i64(env, (int64_t)s.ids))
        || !set_prop(env, out, "fetches", make_i64(env, (int64_t)s.fetches))
        || !set_prop(env, out, "fetchErrors", make_i64(env, (int64_t)s.fetch_errors))
        || !set_prop(env, out, "waits", make_i64(env, (int64_t)s.waits))
        || !set_prop(env, out, "block", make_i64(env, s.block))
        || !set_prop(env, out, "left", make_i64(env, s.left))
        || !set_prop(env, out, "lastError",
                     s.last_error ? make_string(env, idm_err_name(s.last_error))
                                  : make_string(env, ""))
        || !set_prop(env, out, "lastDetail", make_string(env, s.last_detail)))
        return napi_failed(env);
    return out;
}

static napi_value Sequence_close(napi_env env, napi_callback_info info)
{
    js_seq *q;
    napi_value undef;
    if (this_args(env, info, NULL, NULL, (void **)&q) < 0)
        return NULL;
    seq_free(q);
    napi_get_undefined(env, &undef);
    return undef;
}

/* createSequence(name, [urls], start): create it in every store, store k of
 * n as the CLI does; false if it existed in all of them already. */
static napi_value js_createSequence(napi_env env, napi_callback_info info)
{
    napi_value argv[ARGS_MAX], out;
    js_seq q = {0};
    char *name = NULL;
    int64_t start = 1;
    int err = 0, created = 0;
    if (this_args(env, info, NULL, argv, NULL) < 0 || !(name = get_string(env, argv[0], "name")))
        return NULL;
    if (get_i64_arg(env, argv[2], "start", &start) < 0 || stores_open(env, argv[1], &q) < 0)
        goto fail;
    for (size_t k = 0; k < q.nstores; k++) {
        err = idm_store_create(q.stores[k], name, start, (uint32_t)k, (uint32_t)q.nstores);
        if (err == 0)
            created++;
        else if (err != IDM_EEXIST) {
            throw_idm(env, err);
            goto fail;
        }
    }
    free(name);
    seq_free(&q);
    NAPI_OK(napi_get_boolean(env, created > 0, &out));
    return out;
fail:
    free(name);
    seq_free(&q);
    return NULL;
}

/* ------------------------------------------------------------ module */

static napi_value define_class(napi_env env, napi_value exports, const char *name,
                               napi_callback ctor, const napi_property_descriptor *props,
                               size_t n)
{
    napi_value cls;
    NAPI_OK(napi_define_class(env, name, NAPI_AUTO_LENGTH, ctor, NULL, n, props, &cls));
    NAPI_OK(napi_set_named_property(env, exports, name, cls));
    return cls;
}

#define METHOD(name, fn) {name, NULL, fn, NULL, NULL, NULL, napi_default, NULL}
#define FN(name, fn) {name, NULL, fn, NULL, NULL, NULL, napi_enumerable, NULL}

NAPI_MODULE_INIT()
{
    static const napi_property_descriptor layout_props[] = {
        METHOD("decode", Layout_decode), METHOD("idToDate", Layout_idToDate),
        METHOD("range", Layout_range), METHOD("info", Layout_info)};
    static const napi_property_descriptor gen_props[] = {
        METHOD("nextId", Generator_nextId), METHOD("nextBigInt", Generator_nextBigInt),
        METHOD("nextBatch", Generator_nextBatch),
        METHOD("nextBigIntBatch", Generator_nextBigIntBatch),
        METHOD("decode", Generator_decode), METHOD("idToDate", Generator_idToDate),
        METHOD("range", Generator_range), METHOD("info", Generator_info),
        METHOD("stats", Generator_stats), METHOD("close", Generator_close)};
    static const napi_property_descriptor seq_props[] = {
        METHOD("next", Sequence_next), METHOD("nextBigInt", Sequence_nextBigInt),
        METHOD("stats", Sequence_stats), METHOD("close", Sequence_close)};
    static const napi_property_descriptor fns[] = {
        FN("uuidv7", js_uuidv7), FN("uuidv4", js_uuidv4), FN("ulid", js_ulid),
        FN("objectId", js_objectId), FN("parseUuid", js_parseUuid),
        FN("parseUlid", js_parseUlid), FN("parseObjectId", js_parseObjectId),
        FN("parseTime", js_parseTime), FN("presets", js_presets),
        FN("createSequence", js_createSequence), FN("_callFloor", js_callFloor)};

    pthread_once(&g_once, gens_init);
    if (g_init_err < 0)
        return throw_idm(env, g_init_err), NULL;
    if (!define_class(env, exports, "Layout", Layout_new, layout_props,
                      sizeof layout_props / sizeof layout_props[0])
        || !define_class(env, exports, "Generator", Generator_new, gen_props,
                         sizeof gen_props / sizeof gen_props[0])
        || !define_class(env, exports, "Sequence", Sequence_new, seq_props,
                         sizeof seq_props / sizeof seq_props[0]))
        return NULL;
    NAPI_OK(napi_define_properties(env, exports, sizeof fns / sizeof fns[0], fns));
    return exports;
}
