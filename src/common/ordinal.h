/* SPDX-License-Identifier: MIT */
/*
 * A node value from the platform's ordinal, StatefulSet style: a node field
 * given as "ordinal" takes the trailing decimal number of the host name
 * (web-3 -> 3), one given as "ordinal:VAR" the decimal number in the
 * environment variable VAR (Kubernetes sets the pod's in
 * apps.kubernetes.io/pod-index, which a pod spec can pass as POD_ORDINAL).
 * No coordinator is asked: this trusts the platform to give each process a
 * distinct ordinal. What it can check on one host it does: a process holds
 * an OFD lock (F_OFD_SETLK) on DIR/ordinal-<field>-<N>.lock and a listening
 * socket in the abstract namespace, @idmint-ordinal-<field>-<N> (one host:
 * one network namespace), for its whole life; a second process on the same
 * directory, or on any directory of the host, gets a clear error naming the
 * file or the socket and the holder. idmintd (DIR: its data-dir) and the CLI
 * (DIR: its state directory) both go through this file.
 *
 * The host name is gethostname()'s, up to its first '.'; tests set
 * IDM_TEST_HOSTNAME to stand in for it (documented as for tests only: the
 * value a process uses is said in its messages, so a stray setting shows).
 */
#ifndef IDM_ORDINAL_H
#define IDM_ORDINAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The variable that stands in for the host name, for tests. */
#define IDM_ORDINAL_HOSTNAME_ENV "IDM_TEST_HOSTNAME"
/* The largest ordinal taken (any node field is narrower). */
#define IDM_ORDINAL_MAX UINT64_C(4294967295)

/* Whether a node value (the text after "field=") asks for an ordinal:
 * "ordinal" or "ordinal:" followed by anything (checked by resolve). */
bool idm__ordinal_is(const char *value);

/*
 * The ordinal value names: *out, and in from (fromlen bytes) where it came
 * from, for messages ("host name web-3", "POD_ORDINAL=3"). 0, or -1 with
 * why (whylen bytes) one line saying what is wrong: a host name without a
 * trailing number, a variable unset, empty or not a plain decimal, a number
 * above IDM_ORDINAL_MAX, a bad variable name.
 */
int idm__ordinal_resolve(const char *value, uint64_t *out, char *from, size_t fromlen, char *why,
                         size_t whylen);

/*
 * Take the lock of ordinal n of field in dir (which must exist): the file
 * DIR/ordinal-<field>-<n>.lock (made 0600 if missing), locked whole with
 * F_OFD_SETLK and kept open (close-on-exec) for the rest of the process;
 * the holder writes "pid <PID> <who>" into it. The descriptor, or -1 with
 * why: another process holds it (naming the file and what it wrote), or
 * the file cannot be made or locked (naming the file and errno's text).
 */
int idm__ordinal_lock(const char *dir, const char *field, uint64_t n, const char *who, char *why,
                      size_t whylen);

#endif /* IDM_ORDINAL_H */
