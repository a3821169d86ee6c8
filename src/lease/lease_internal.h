/* SPDX-License-Identifier: MIT */
/* Helpers shared by the lease sources; not installed. */
#ifndef IDM_LEASE_INTERNAL_H
#define IDM_LEASE_INTERNAL_H

#include <idmint/idmint.h>

#define idm__lease_fail idm_error_fail

/* The smallest safety margin a lease on clock (NULL: the system clock) may
 * use, in ms. */
int64_t idm__lease_min_margin_ms(const idm_clock *clock);

#endif /* IDM_LEASE_INTERNAL_H */
