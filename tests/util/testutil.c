/* SPDX-License-Identifier: MIT */
#include "testutil.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <idmint/lease.h>

uint64_t idm_test_seed(void)
{
    static uint64_t seed;
    static int have;
    if (!have) {
        const char *env = getenv("IDM_TEST_SEED");
        if (env != NULL && *env != '\0') {
            seed = strtoull(env, NULL, 0);
        } else {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            seed = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^
                   ((uint64_t)getpid() << 32);
        }
        have = 1;
        fprintf(stderr, "# seed: IDM_TEST_SEED=%llu\n", (unsigned long long)seed);
    }
    return seed;
}

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void idm_test_rng_init(idm_test_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t idm_test_rng_next(idm_test_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t idm_test_rng_range(idm_test_rng *r, uint64_t lo, uint64_t hi)
{
    uint64_t span = hi - lo;
    if (span == UINT64_MAX)
        return idm_test_rng_next(r);
    return lo + idm_test_rng_next(r) % (span + 1);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

size_t idm_test_count_duplicates(uint64_t *ids, size_t n)
{
    size_t dups = 0;
    qsort(ids, n, sizeof ids[0], cmp_u64);
    for (size_t i = 1; i < n; i++)
        if (ids[i] == ids[i - 1])
            dups++;
    return dups;
}

int idm_test_strictly_increasing(const uint64_t *ids, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (ids[i] <= ids[i - 1])
            return 0;
    return 1;
}

char *idm_test_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/idmint-test-XXXXXX",
             base != NULL && *base != '\0' ? base : "/tmp");
    if (mkdtemp(tmpl) == NULL) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        abort();
    }
    return strdup(tmpl);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void idm_test_rmtree(const char *path)
{
    if (path != NULL)
        nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *idm_test_path(const char *dir, const char *name)
{
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = malloc(len);
    if (p == NULL)
        abort();
    snprintf(p, len, "%s/%s", dir, name);
    return p;
}

void idm_test_idvec_push(idm_test_idvec *iv, uint64_t id)
{
    if (iv->n == iv->cap) {
        size_t cap = iv->cap != 0 ? iv->cap * 2 : 1024;
        uint64_t *p = realloc(iv->v, cap * sizeof *p);
        assert_non_null(p);
        iv->v = p;
        iv->cap = cap;
    }
    iv->v[iv->n++] = id;
}

void idm_test_idvec_free(idm_test_idvec *iv)
{
    free(iv->v);
    memset(iv, 0, sizeof *iv);
}

void idm_test_check_ids(const idm_test_idvec *iv)
{
    CHECK(iv->n > 0, "no id was minted");
    CHECK(idm_test_strictly_increasing(iv->v, iv->n),
          "the %zu ids minted do not strictly increase", iv->n);
    uint64_t *copy = malloc(iv->n * sizeof *copy);
    assert_non_null(copy);
    memcpy(copy, iv->v, iv->n * sizeof *copy);
    size_t dups = idm_test_count_duplicates(copy, iv->n);
    free(copy);
    CHECK(dups == 0, "%zu duplicate ids among %zu", dups, iv->n);
}

void idm_test_scope_of(const char *preset, const char *text, idm_unix_ms epoch,
                       const char *field, char *out)
{
    idm_layout *l;
    if (text != NULL)
        IDM_ASSERT_OK(idm_layout_parse(&l, text, epoch));
    else
        IDM_ASSERT_OK(idm_layout_preset(&l, preset));
    IDM_ASSERT_OK(idm_lease_scope(l, field, out, IDM_LEASE_SCOPE_MAX));
    idm_layout_free(l);
}

int idm_test_threads_now(void)
{
    int n = 0;
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    assert_non_null(f);
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(f);
    assert_true(n > 0);
    return n;
}

uint32_t idm_test_crc32(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < len; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return c ^ 0xffffffffu;
}
