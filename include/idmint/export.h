/* SPDX-License-Identifier: MIT */
/*
 * Symbol visibility for libidmint. The library is built with hidden
 * visibility; only declarations marked IDM_EXTERN are exported.
 */
#ifndef IDMINT_EXPORT_H
#define IDMINT_EXPORT_H

#if defined(IDM_BUILDING_LIBRARY) && defined(__GNUC__)
#define IDM_EXTERN __attribute__((visibility("default")))
#else
#define IDM_EXTERN
#endif

#endif /* IDMINT_EXPORT_H */
