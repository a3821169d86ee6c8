/* SPDX-License-Identifier: MIT */
/*
 * The smallest complete use of libidmint: build a generator on the twitter
 * preset for datacenter 1, worker 7, with a state file so a restart never
 * reuses time, mint a few ids and decode one. The build compiles this file
 * and the test suite runs it, so it cannot drift from the API.
 *
 *   cc mint.c $(pkg-config --cflags --libs idmint) -o mint && ./mint /tmp/w7.state
 */
#include <stdio.h>
#include <idmint/idmint.h>

int main(int argc, char **argv)
{
    idm_layout *layout;
    idm_snowflake_opts opts;
    idm_snowflake *gen;
    uint64_t ids[4];
    idm_decoded d;
    char when[IDM_TIME_TEXT_MAX];
    int rc;

    if (argc != 2) {
        fprintf(stderr, "usage: %s STATE_FILE\n", argv[0]);
        return 2;
    }
    if ((rc = idm_layout_preset(&layout, "twitter")) != 0)
        goto fail;
    idm_snowflake_opts_init(&opts);
    opts.layout = layout;
    opts.state_path = argv[1];
    opts.state_fresh = 1; /* create the file on the first run */
    if ((rc = idm_snowflake_opts_node(&opts, "datacenter", 1)) != 0 ||
        (rc = idm_snowflake_opts_node(&opts, "worker", 7)) != 0 ||
        (rc = idm_snowflake_open(&gen, &opts)) != 0)
        goto fail;

    if ((rc = idm_snowflake_next_batch(gen, ids, 4)) != 0)
        goto fail;
    for (int i = 0; i < 4; i++)
        printf("%llu\n", (unsigned long long)ids[i]);

    idm_layout_decode(layout, ids[0], &d);
    idm_time_format(d.unix_ms, when, sizeof when);
    printf("first: time=%s datacenter=%llu worker=%llu seq=%llu\n", when,
           (unsigned long long)d.value[1], (unsigned long long)d.value[2],
           (unsigned long long)d.seq);

    if ((rc = idm_snowflake_close(gen)) != 0)
        goto fail;
    idm_layout_free(layout);
    return 0;

fail:
    fprintf(stderr, "mint: %s: %s\n", idm_strerror(rc), idm_error_detail());
    return 1;
}
