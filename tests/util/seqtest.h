/* SPDX-License-Identifier: MIT */
/*
 * What the allocator's tests (test_seq.c, test_seq_floors.c) share: options
 * for the sequence "orders", in-memory stores that fail the test when they
 * cannot be made, and the two-store setup most of them start from.
 */
#ifndef IDM_TEST_SEQTEST_H
#define IDM_TEST_SEQTEST_H

#include <stddef.h>
#include <stdint.h>

#include <idmint/segment.h>

#include "memstore.h"

/* Options for sequence "orders" over stores[0..n-1], the rest defaults. */
void idm_test_seq_opts(idm_seq_opts *o, idm_store **stores, size_t n);

/* A new in-memory store (its idm_store in *store); fails the test if it
 * cannot be made. */
idm_test_memstore *idm_test_ms_new(idm_store **store);

/* Two in-memory stores. */
typedef struct idm_test_pair {
    idm_store *st[2];
    idm_test_memstore *m[2];
} idm_test_pair;

/* Two new stores; with name set, that sequence is created in both (first
 * id 1) as store 0 and store 1 of 2. Fails the test on an error. */
void idm_test_pair_new(idm_test_pair *p, const char *name);
void idm_test_pair_free(idm_test_pair *p);

void idm_test_sleep_ms(int64_t ms);

#endif /* IDM_TEST_SEQTEST_H */
