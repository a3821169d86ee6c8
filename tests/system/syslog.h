/* SPDX-License-Identifier: MIT */
/*
 * The whole-system fault suite's logs: what every minting process of the
 * fleet acknowledged, and what the nemesis did. Written by sysmint (the
 * fleet's clients and library minters) and fleet.py (the nemesis), read by
 * syscheck (the checker).
 *
 * One id log per process incarnation: LOGDIR/ids/<process>.<incarnation>.log,
 * append-only, binary, host byte order. A file is the header below, then
 * records until end of file. A record is written with one write(2) after
 * its ids were acknowledged (an HTTP answer read in full, a library call
 * returned, a CLI run's line read); a process killed mid-write leaves at most
 * one torn record at the end, which the checker ignores (and counts).
 *
 * Times are the real system clock (CLOCK_REALTIME, ns since 1970) of the
 * process that wrote the log, read just before the request was sent and just
 * after the answer was read. A minter whose clock the nemesis moves (an
 * offset file, read every 20 ms, as idmintd's clock=offset-file: reads it)
 * has, as its own clock, the real clock plus the offset in effect; the
 * events file says which offset was in effect when (the "clock" lines), so
 * the checker adds it back. The header's clock names that clock ("" for
 * the system's).
 */
#ifndef IDM_SYSLOG_H
#define IDM_SYSLOG_H

#include <stdint.h>

#define IDMS_MAGIC "IDMSYSL1" /* 8 bytes, no NUL */

enum idms_kind {
    IDMS_SNOWFLAKE = 1, /* 64-bit time-ordered ids of the header's layout */
    IDMS_TICKET = 2     /* segment (ticket) ids: only unique across the fleet */
};

typedef struct idms_header {
    char magic[8];         /* IDMS_MAGIC */
    char process[32];      /* the minter's name, NUL-padded ("idmintd-etcd-1") */
    uint32_t incarnation;  /* 1, 2, ...: which start of that process */
    uint32_t kind;         /* enum idms_kind */
    char layout[96];       /* NUL-padded: a preset name or a layout's text
                              form, as idm_layout_from_spec takes it
                              (snowflake logs; "" for tickets) */
    int64_t epoch_ms;      /* the epoch, as given to idm_layout_from_spec
                              (0: the preset's) */
    int64_t drift_ms;      /* how far ahead of its own clock the minter may
                              mint (logical time's max_drift_ms; 0 if its
                              policy never mints ahead) */
    int64_t restart_ms;    /* how far ahead of its clock a restarted or
                              re-claimed generator may start: the state
                              file's lookahead, the coordinator's mark
                              (the checker allows the larger of this and
                              drift_ms above the clock) */
    char clock[32];        /* NUL-padded: the name of the offset clock
                              (events file "clock" lines), "" = system */
    char group[32];        /* NUL-padded: the id namespace: logs of one
                              group share worker ids and must never share
                              an id ("snowflake", "tickets"); the checker
                              also checks ids unique across all groups of a
                              kind */
} idms_header;

typedef struct idms_record {
    int64_t t_send_ns;  /* real clock before the request */
    int64_t t_recv_ns;  /* real clock after the answer */
    uint32_t count;     /* ids that follow (uint64_t each), >= 1 */
    uint32_t flags;     /* IDMS_F_* */
    /* uint64_t ids[count]; in the order they were handed out */
} idms_record;

#define IDMS_F_BATCH 1u  /* one request for several ids (else one id) */
#define IDMS_F_CLI 2u    /* a whole `idmint next` run: t_send before exec,
                            t_recv after its last line */

/*
 * The events file, LOGDIR/events.tsv, text, one event a line, fields
 * separated by one tab, times in ns of the real clock:
 *
 *   fault  T_START  T_END  KIND  TARGET  AFFECTED  DETAIL
 *       a fault injected at T_START and healed at T_END (equal for one that
 *       is over at once, such as kill -9 followed by a restart). KIND is one
 *       of the nemesis's kinds (kill9, pause, leader, freeze, cut, clock-back,
 *       clock-forward, clock-fast, store-stop, disk-full). TARGET names the
 *       process or server it hit; AFFECTED the minting processes it can
 *       delay, comma-separated (the checker's recovery time: from T_END to
 *       the first acknowledged id of each, the largest); DETAIL free text.
 *   clock  T  NAME  OFFSET_MS
 *       the offset clock NAME (an offset file) set to OFFSET_MS at T. A
 *       clock with no line before a time has offset 0. A minter reads its
 *       file every 20 ms, so the checker takes, for a record, every offset
 *       in effect from IDMS_CLOCK_LAG_NS before t_send to t_recv.
 *   start  T  PROCESS  INCARNATION
 *   stop   T  PROCESS  INCARNATION  HOW
 *       a minting process started, or ended (HOW: exit, kill9, term).
 *   run    T_START  T_END  SEED  SECONDS
 *       the run's bounds and its seed (first and last line).
 */
#define IDMS_CLOCK_LAG_NS (100 * 1000000LL)

#endif /* IDM_SYSLOG_H */
