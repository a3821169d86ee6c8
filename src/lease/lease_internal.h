/* SPDX-License-Identifier: MIT */
/* Helpers shared by the lease sources; not installed. */
#ifndef IDM_LEASE_INTERNAL_H
#define IDM_LEASE_INTERNAL_H

#include <idmint/idmint.h>

#define idm__lease_fail idm_error_fail

#endif /* IDM_LEASE_INTERNAL_H */
