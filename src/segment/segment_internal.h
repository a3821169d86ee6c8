/* SPDX-License-Identifier: MIT */
/* What the store sources share; not installed. */
#ifndef IDM_SEGMENT_INTERNAL_H
#define IDM_SEGMENT_INTERNAL_H

#include <idmint/idmint.h>
#include <idmint/segment.h>

#include "common.h"
#include "store_within.h"

/* A backend reached by URL (store.c's table of schemes names it): open
 * fills the operations' context from the whole URL. Each backend is one
 * file linking only its client library, built when IDM_WITH_<NAME> is
 * defined. A backend bounds each call by its timeout (open's timeout_ms,
 * open included, until set_timeout changes it); store.c calls
 * set_timeout and identity under the store's mutex, so never during another
 * call on ctx. identity is the backend's part of idm_store_identity. */
typedef struct idm__store_backend {
    const idm_store_ops *ops;
    int (*open)(void **ctx, const char *url, int64_t timeout_ms);
    void (*set_timeout)(void *ctx, int64_t ms); /* 1 to IDM__STORE_TIMEOUT_MAX_MS */
    int (*identity)(void *ctx, char *out, size_t cap);
} idm__store_backend;

/* The longest timeout idm_store_set_timeout takes: an hour. */
#define IDM__STORE_TIMEOUT_MAX_MS INT64_C(3600000)

extern const idm__store_backend idm__store_sqlite;
extern const idm__store_backend idm__store_postgres;

/* The SQL both database backends run (one statement each; ? or $n bound):
 * the table holds, per sequence, the next local value and the store's k of
 * n; floors are kept per (sequence, store k). */
#define IDM__SEQ_TABLE "idmint_sequences"
#define IDM__FLOOR_TABLE "idmint_floors"

#define idm__seg_fail idm_error_fail

/* A sequence name: 1 to IDM_SEQ_NAME_MAX of [A-Za-z0-9_.-]; IDM_EINVAL
 * with a detail naming the fault. */
int idm__seq_check_name(const char *name);

/* Floors (see idm_store_ops), under the store's mutex; floors are in store
 * k's local units: store k's counter must never be below them. */
int idm__store_floor_get(idm_store *s, const char *name, uint32_t k, int64_t *floor);
int idm__store_floor_raise(idm_store *s, const char *name, uint32_t k, int64_t floor);

#endif /* IDM_SEGMENT_INTERNAL_H */
