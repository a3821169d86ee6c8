/* SPDX-License-Identifier: MIT */
/* The allocator tests' shared setup (see seqtest.h). */
#include "seqtest.h"

#include <time.h>

#include "testutil.h"

void idm_test_seq_opts(idm_seq_opts *o, idm_store **stores, size_t n)
{
    idm_seq_opts_init(o);
    o->name = "orders";
    o->stores = stores;
    o->nstores = n;
}

idm_test_memstore *idm_test_ms_new(idm_store **store)
{
    idm_test_memstore *m = idm_test_memstore_new(store);
    assert_non_null(m);
    return m;
}

void idm_test_pair_new(idm_test_pair *p, const char *name)
{
    for (uint32_t k = 0; k < 2; k++) {
        p->m[k] = idm_test_ms_new(&p->st[k]);
        if (name != NULL)
            IDM_ASSERT_OK(idm_store_create(p->st[k], name, 1, k, 2));
    }
}

void idm_test_pair_free(idm_test_pair *p)
{
    for (int k = 0; k < 2; k++)
        idm_test_memstore_free(p->m[k], p->st[k]);
}

void idm_test_sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}
