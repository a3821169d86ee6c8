/* SPDX-License-Identifier: MIT */
/*
 * What zookeeper.c shows its tests (tests/unit/test_lease_zk.c): hidden
 * functions of idmint_lease, never exported; not installed.
 */
#ifndef IDM_ZOOKEEPER_INTERNAL_H
#define IDM_ZOOKEEPER_INTERNAL_H

#include <stdint.h>

/* What a child name of <prefix>/workers/ is (idm__zk_parse_id). */
enum {
    IDM__ZK_NOT_ID = 0,    /* not a worker id: ignored */
    IDM__ZK_ID = 1,        /* a worker id below max, in canonical decimal */
    IDM__ZK_AMBIGUOUS = 2, /* digits with leading zeros ("0012") whose value is
                              below max: never created by idmint, not an id,
                              but the id it may mean is not chosen either */
};

/*
 * The worker id a node name under <prefix>/workers/ or <prefix>/hwm/
 * names: IDM__ZK_ID and *id for canonical decimal (no sign, no white
 * space, no leading zero but in "0" itself) below max; IDM__ZK_AMBIGUOUS
 * and *id for other digit strings whose value is below max; else
 * IDM__ZK_NOT_ID: a sign ("-2147483648", a wrapped sequence counter, and
 * "+1"), anything but digits ("abc", "1 "), a value of max or more, or one
 * too long to read (overflow is checked digit by digit, never wrapped).
 */
int idm__zk_parse_id(const char *name, uint32_t max, uint32_t *id);

/* Since the process started, across every zk:// handle: the waits for
 * answers (round trips; requests pipelined together count once) and the
 * requests sent. */
void idm__zk_counters(uint64_t *round_trips, uint64_t *requests);

#endif /* IDM_ZOOKEEPER_INTERNAL_H */
