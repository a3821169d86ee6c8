/* SPDX-License-Identifier: MIT */
/*
 * What the lease sources share with each other and with their tests: hidden
 * functions of idmint_lease (never exported: tests/abi_symbols.sh checks the
 * list), reached by tests/unit/test_lease_*.c; not installed.
 */
#ifndef IDM_LEASE_INTERNAL_H
#define IDM_LEASE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <idmint/idmint.h>
#include <idmint/lease.h>

/* ---- lease.c */

/* The smallest safety margin a lease on clock (NULL: the system clock) may
 * use, in ms. */
int64_t idm__lease_min_margin_ms(const idm_clock *clock);

/* The TTL the coordinator granted l, in ms. */
int64_t idm__lease_ttl_ms(const idm_lease *l);

/* ---- file.c */

/* 1 if statfs(2)'s f_type names a file system shared between machines
 * (NFS, SMB/CIFS, 9P, FUSE, Ceph, AFS, GFS2, OCFS2, Lustre, ...), whose
 * locks a file:// lease cannot rely on; file.c refuses such a directory. */
int idm__lease_fs_is_network(unsigned long f_type);

/* The check of a record line: 64-bit FNV-1a of its n bytes before the
 * check. */
uint64_t idm__lease_fnv1a(const char *s, size_t n);

#ifdef IDM_TEST_HOOKS
/* Test builds only (tests/CMakeLists.txt compiles file.c into a test with
 * IDM_TEST_HOOKS): called at named points of a holder's record ("marks
 * checked": a renewal checked that its lock file is its own and is about
 * to record), to show what a claim racing it sees. */
extern void (*idm__lease_file_test_hook)(const char *point);
#endif

#endif /* IDM_LEASE_INTERNAL_H */
