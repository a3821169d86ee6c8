/* SPDX-License-Identifier: MIT */
/*
 * idmint._speedups: the optional accelerator of the Python package's hot
 * calls (uuid7, uuid4, ulid, Snowflake.next). A ctypes call costs a few
 * hundred ns of argument conversion and dispatch; here the call is a plain C
 * call and the result object is built in C.
 *
 * The module does not link libidmint: idmint/__init__.py loads the library
 * with ctypes as always and hands bind() the addresses of the C functions
 * called here, the objects the results are made of (uuid.UUID, the member
 * descriptors of its `int` and `is_safe` slots, SafeUUID.unknown) and a
 * Python callable that raises idmint's exception for a C error code (so an
 * error is the same idmint.Error subclass, with the same message, as on the
 * ctypes path). The generators of uuid7() and ulid() are asked of Python
 * (the package's per-process generators) on first use and kept here.
 *
 * The GIL: uuid7, uuid4 and ulid never wait (a spinlock held for a few
 * instructions, randomness from a per-thread buffer), so they keep the GIL,
 * which is cheaper than releasing it and avoids handing it to and fro when
 * threads mint at once. Snowflake's next may sleep (the next tick, a clock
 * step back, a lease switch) and releases the GIL as ctypes does.
 *
 * Private to the package: the addresses given are trusted as ctypes trusts
 * them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

/* Py_NewRef arrived in Python 3.10. */
static PyObject *sp_ref(PyObject *o)
{
    Py_INCREF(o);
    return o;
}

/* The 16 bytes of idm_uuid and idm_ulid (uuid.h, ulid.h). */
typedef struct sp_bytes16 {
    uint8_t b[16];
} sp_bytes16;

#define SP_ULID_TEXT 26

typedef int (*sp_mint16_fn)(void *gen, sp_bytes16 *out);
typedef int (*sp_uuid4_fn)(const void *rng, sp_bytes16 *out);
typedef void (*sp_ulid_format_fn)(const sp_bytes16 *in, char out[SP_ULID_TEXT + 1]);
typedef int (*sp_next_u64_fn)(void *gen, uint64_t *out);

/* What bind() gave; NULL until then. Module-global: the package binds once
 * per process, and a forked child keeps the same library at the same
 * addresses. */
static sp_mint16_fn uuid7_next;
static sp_uuid4_fn uuid4_fn;
static sp_mint16_fn ulid_next;
static sp_ulid_format_fn ulid_format;
static PyObject *uuid7_gen_get; /* () -> int: the per-process generators */
static PyObject *ulid_gen_get;
static void *uuid7_gen;         /* what they returned, kept */
static void *ulid_gen;
static PyTypeObject *uuid_type;
static PyObject *int_slot;      /* uuid.UUID.int, a member descriptor */
static PyObject *safe_slot;     /* uuid.UUID.is_safe */
static descrsetfunc int_set;
static descrsetfunc safe_set;
static PyObject *safe_unknown;  /* uuid.SafeUUID.unknown */
static PyObject *raiser;        /* (rc, context) -> raises idmint.Error */

/* --------------------------------------------------------------- helpers */

/* An address given as a Python int; NULL with an exception set for
 * anything else (0 included). */
static void *address_of(PyObject *o, const char *what)
{
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: an address (int) is needed, not %s", what,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    void *p = PyLong_AsVoidPtr(o);
    if (p == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "%s: a NULL address", what);
    return p;
}

/* Raise idmint's exception for C code rc through the bound raiser. Call it
 * right after the failing call, on the same thread: the raiser reads the C
 * library's thread-local detail. Returns NULL. */
static PyObject *raise_rc(int rc, const char *context)
{
    PyObject *r = PyObject_CallFunction(raiser, "is", rc, context);
    if (r != NULL) {
        Py_DECREF(r);
        PyErr_Format(PyExc_SystemError, "idmint._speedups: the raiser returned for "
                     "code %d", rc);
    }
    return NULL;
}

static int check_bound(void)
{
    if (raiser == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "idmint._speedups: not bound (the idmint "
                        "package binds it at import)");
        return -1;
    }
    return 0;
}

/* The generator *slot, asked of get on first use. */
static void *generator(void **slot, PyObject *get)
{
    if (check_bound() < 0)
        return NULL;
    PyObject *r = PyObject_CallObject(get, NULL);
    if (r == NULL)
        return NULL;
    void *g = address_of(r, "generator");
    Py_DECREF(r);
    if (g != NULL)
        *slot = g;  /* under the GIL; every caller gets the same pointer */
    return g;
}

/* A Python int of 16 big-endian bytes. */
static PyObject *int_of_bytes16(const sp_bytes16 *u)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyLong_FromUnsignedNativeBytes(u->b, 16, Py_ASNATIVEBYTES_BIG_ENDIAN
                                          | Py_ASNATIVEBYTES_UNSIGNED_BUFFER);
#else
    return _PyLong_FromByteArray(u->b, 16, 0, 0);
#endif
}

/* A uuid.UUID of 16 bytes that are a valid UUID already: what
 * object.__new__(UUID) makes, its two slots set through their descriptors
 * (UUID.__setattr__ refuses), as uuid.UUID(int=...) leaves them. */
static PyObject *uuid_of(const sp_bytes16 *u)
{
    PyObject *value = int_of_bytes16(u);
    if (value == NULL)
        return NULL;
    PyObject *obj = uuid_type->tp_alloc(uuid_type, 0);
    if (obj == NULL) {
        Py_DECREF(value);
        return NULL;
    }
    if (int_set(int_slot, obj, value) < 0 || safe_set(safe_slot, obj, safe_unknown) < 0) {
        Py_DECREF(value);
        Py_DECREF(obj);
        return NULL;
    }
    Py_DECREF(value);
    return obj;
}

static PyObject *mint_uuid7(void *g)
{
    sp_bytes16 u;
    int rc = uuid7_next(g, &u);
    if (rc != 0)
        return raise_rc(rc, "uuid7");
    return uuid_of(&u);
}

/* ------------------------------------------------------------- functions */

static PyObject *sp_uuid7(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    void *g = uuid7_gen;
    if (g == NULL && (g = generator(&uuid7_gen, uuid7_gen_get)) == NULL)
        return NULL;
    return mint_uuid7(g);
}

static PyObject *sp_uuid7_from(PyObject *module, PyObject *gen)
{
    (void)module;
    if (check_bound() < 0)
        return NULL;
    void *g = address_of(gen, "uuid7_from");
    if (g == NULL)
        return NULL;
    return mint_uuid7(g);
}

static PyObject *sp_uuid4(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    if (check_bound() < 0)
        return NULL;
    sp_bytes16 u;
    int rc = uuid4_fn(NULL, &u);
    if (rc != 0)
        return raise_rc(rc, "uuid4");
    return uuid_of(&u);
}

static PyObject *sp_ulid(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    void *g = ulid_gen;
    if (g == NULL && (g = generator(&ulid_gen, ulid_gen_get)) == NULL)
        return NULL;
    sp_bytes16 u;
    int rc = ulid_next(g, &u);
    if (rc != 0)
        return raise_rc(rc, "ulid");
    char text[SP_ULID_TEXT + 1];
    ulid_format(&u, text);
    return PyUnicode_DecodeASCII(text, SP_ULID_TEXT, NULL);
}

/* next_u64(fn, gen): fn(gen, &out) for idm_snowflake_next or
 * idm_leased_next, with the GIL released; out as an int. */
static PyObject *sp_next_u64(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "next_u64() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (check_bound() < 0)
        return NULL;
    void *f = address_of(args[0], "next_u64 function");
    if (f == NULL)
        return NULL;
    void *g = address_of(args[1], "next_u64 generator");
    if (g == NULL)
        return NULL;
    sp_next_u64_fn next = (sp_next_u64_fn)(uintptr_t)f;
    uint64_t out = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = next(g, &out);
    Py_END_ALLOW_THREADS
    if (rc != 0)
        return raise_rc(rc, "next");
    return PyLong_FromUnsignedLongLong(out);
}

/* A member descriptor's setter, or NULL with TypeError. */
static descrsetfunc setter_of(PyObject *descr, const char *what)
{
    descrsetfunc set = Py_TYPE(descr)->tp_descr_set;
    if (set == NULL)
        PyErr_Format(PyExc_TypeError, "bind: %s is no data descriptor", what);
    return set;
}

static PyObject *sp_bind(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *names[] = {"uuid7_next", "uuid4", "ulid_next", "ulid_format",
                            "uuid7_gen", "ulid_gen", "uuid_type", "int_slot",
                            "safe_slot", "safe_unknown", "raiser", NULL};
    PyObject *a_uuid7, *a_uuid4, *a_ulid, *a_format, *g7, *gu, *type, *islot, *sslot,
        *unknown, *raise;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOOOOO!OOOO:bind", names, &a_uuid7,
                                     &a_uuid4, &a_ulid, &a_format, &g7, &gu, &PyType_Type,
                                     &type, &islot, &sslot, &unknown, &raise))
        return NULL;
    void *f7 = address_of(a_uuid7, "uuid7_next");
    void *f4 = f7 ? address_of(a_uuid4, "uuid4") : NULL;
    void *fu = f4 ? address_of(a_ulid, "ulid_next") : NULL;
    void *ff = fu ? address_of(a_format, "ulid_format") : NULL;
    if (ff == NULL)
        return NULL;
    if (!PyCallable_Check(g7) || !PyCallable_Check(gu) || !PyCallable_Check(raise)) {
        PyErr_SetString(PyExc_TypeError, "bind: uuid7_gen, ulid_gen and raiser must be "
                        "callables");
        return NULL;
    }
    descrsetfunc iset = setter_of(islot, "int_slot");
    descrsetfunc sset = iset ? setter_of(sslot, "safe_slot") : NULL;
    if (sset == NULL)
        return NULL;
    uuid7_next = (sp_mint16_fn)(uintptr_t)f7;
    uuid4_fn = (sp_uuid4_fn)(uintptr_t)f4;
    ulid_next = (sp_mint16_fn)(uintptr_t)fu;
    ulid_format = (sp_ulid_format_fn)(uintptr_t)ff;
    int_set = iset;
    safe_set = sset;
    uuid7_gen = NULL;
    ulid_gen = NULL;
    Py_XSETREF(uuid7_gen_get, sp_ref(g7));
    Py_XSETREF(ulid_gen_get, sp_ref(gu));
    Py_XSETREF(uuid_type, (PyTypeObject *)sp_ref(type));
    Py_XSETREF(int_slot, sp_ref(islot));
    Py_XSETREF(safe_slot, sp_ref(sslot));
    Py_XSETREF(safe_unknown, sp_ref(unknown));
    Py_XSETREF(raiser, sp_ref(raise));
    Py_RETURN_NONE;
}

static PyMethodDef sp_methods[] = {
    {"bind", (PyCFunction)(void (*)(void))sp_bind, METH_VARARGS | METH_KEYWORDS,
     "bind(*, uuid7_next, uuid4, ulid_next, ulid_format, uuid7_gen, ulid_gen, "
     "uuid_type, int_slot, safe_slot, safe_unknown, raiser): what the other "
     "functions call (the package does this at import)."},
    {"uuid7", sp_uuid7, METH_NOARGS,
     "A UUIDv7 (RFC 9562): ms timestamp, then monotonic random bits; strictly\n"
     "increasing within the process, across threads."},
    {"uuid7_from", sp_uuid7_from, METH_O,
     "uuid7_from(gen): a UUIDv7 from the idm_uuid7_gen at address gen."},
    {"uuid4", sp_uuid4, METH_NOARGS, "A UUIDv4 from idmint's CSPRNG."},
    {"ulid", sp_ulid, METH_NOARGS,
     "A ULID, monotonic within the process (the spec's monotonic mode)."},
    {"next_u64", (PyCFunction)(void (*)(void))sp_next_u64, METH_FASTCALL,
     "next_u64(fn, gen): fn(gen, &out) with the GIL released; out, or the "
     "exception for the error code."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef sp_module = {
    PyModuleDef_HEAD_INIT, "idmint._speedups",
    "The optional accelerator of idmint's hot calls (see idmint/_speedups.c).", -1,
    sp_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void)
{
    return PyModule_Create(&sp_module);
}
