/* SPDX-License-Identifier: MIT */
/*
 * Layouts: how the 64 bits of a Snowflake-style id are divided.
 *
 * A layout is an ordered list of fields from the high bit down: exactly one
 * time field (its width in bits and its tick length, counted from an epoch),
 * zero or more named node fields (datacenter, worker, shard, machine...) and
 * exactly one sequence field. Order is data: Twitter puts the node fields
 * between time and sequence, Sonyflake puts the sequence above the machine.
 * Unused high bits stay zero; a layout of all 64 bits can set the sign bit
 * (see idm_layout_sign_bit).
 *
 * Text form, used by the CLI, config files and the service:
 *     time:41@1ms,datacenter:5,worker:5,seq:12
 * Fields are "name:bits", separated by commas, high bit first. The time field
 * comes first (so ids sort by time), is named "time" and carries its tick
 * after "@" ("1ms", "10ms", "1s"; from 1 ms to 60 s); the sequence field is named "seq"; every other name is a node
 * field ([a-z][a-z0-9_]*, at most 31 bytes). The epoch is given separately.
 *
 * Presets follow each system's published code:
 *   twitter    time:41@1ms,datacenter:5,worker:5,seq:12  epoch 1288834974657
 *   discord    time:42@1ms,worker:5,process:5,seq:12     epoch 1420070400000
 *   instagram  time:41@1ms,shard:13,seq:10               epoch 1314220021721
 *   sonyflake  time:39@10ms,seq:8,machine:16             epoch 1409529600000
 *
 * A layout is immutable once built; every function here is thread-safe.
 */
#ifndef IDMINT_LAYOUT_H
#define IDMINT_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "clock.h"
#include "export.h"

#define IDM_LAYOUT_MAX_FIELDS 16
#define IDM_FIELD_NAME_MAX 31
/* Room for any layout's text form, with its NUL. */
#define IDM_LAYOUT_TEXT_MAX 512
#define IDM_TICK_MS_MAX 60000

typedef struct idm_layout idm_layout;

typedef enum idm_field_kind {
    IDM_FIELD_TIME = 1,
    IDM_FIELD_NODE = 2,
    IDM_FIELD_SEQ = 3
} idm_field_kind;

typedef struct idm_field_info {
    const char *name;    /* valid while the layout lives */
    idm_field_kind kind;
    unsigned bits;
    unsigned shift;      /* position of the field's lowest bit in the id */
    uint64_t max;        /* largest value the field holds: 2^bits - 1 */
} idm_field_info;

/* A decoded id: every field's raw value by field index, plus conveniences. */
typedef struct idm_decoded {
    idm_unix_ms unix_ms; /* start of the id's tick, ms since 1970 */
    uint64_t tick;       /* the time field's value */
    uint64_t seq;        /* the sequence field's value */
    uint64_t value[IDM_LAYOUT_MAX_FIELDS];
} idm_decoded;

/* NULL-terminated list of preset names. */
IDM_EXTERN const char *const *idm_layout_preset_names(void);

/* Build a preset by name. IDM_ELAYOUT for an unknown name. */
IDM_EXTERN int idm_layout_preset(idm_layout **out, const char *name);

/* Build a layout from its text form and an epoch. IDM_ELAYOUT with a detail
 * line naming the problem: unknown or repeated field, missing time or seq
 * field, zero-width field, more than 64 bits, bad tick, negative epoch. */
IDM_EXTERN int idm_layout_parse(idm_layout **out, const char *text,
                                idm_unix_ms epoch);

/*
 * What the CLI and config files take: spec is a preset name or a text form;
 * epoch_text (idm_time_parse syntax) overrides the preset's epoch and is
 * required for a text form. NULL epoch_text keeps the preset's.
 */
IDM_EXTERN int idm_layout_from_spec(idm_layout **out, const char *spec,
                                    const char *epoch_text);

IDM_EXTERN int idm_layout_dup(idm_layout **out, const idm_layout *l);
IDM_EXTERN void idm_layout_free(idm_layout *l);

/* The text form (without the epoch). IDM_EINVAL if len is too small. */
IDM_EXTERN int idm_layout_format(const idm_layout *l, char *buf, size_t len);
/* The preset's name, or "custom". */
IDM_EXTERN const char *idm_layout_name(const idm_layout *l);
IDM_EXTERN idm_unix_ms idm_layout_epoch(const idm_layout *l);
IDM_EXTERN int64_t idm_layout_tick_ms(const idm_layout *l);
/* Bits the fields use in all (at most 64). */
IDM_EXTERN unsigned idm_layout_bits(const idm_layout *l);
IDM_EXTERN unsigned idm_layout_seq_bits(const idm_layout *l);
IDM_EXTERN size_t idm_layout_field_count(const idm_layout *l);
IDM_EXTERN int idm_layout_field(const idm_layout *l, size_t index,
                                idm_field_info *out);
/* Index of the named field, or IDM_EINVAL (with a detail) if none. */
IDM_EXTERN int idm_layout_field_index(const idm_layout *l, const char *name);
/* The first Unix ms the time field cannot hold. */
IDM_EXTERN idm_unix_ms idm_layout_time_end(const idm_layout *l);
/*
 * True if the layout uses bit 63, so that ids read as signed 64-bit integers
 * (Java long, PostgreSQL bigint) turn negative. *from (if not NULL) gets the
 * first Unix ms whose ids do: the time field is always the top field, so
 * that is when its top bit first sets.
 */
IDM_EXTERN bool idm_layout_sign_bit(const idm_layout *l, idm_unix_ms *from);

/* Split id into its fields. IDM_ERANGE if id has bits above the layout's. */
IDM_EXTERN int idm_layout_decode(const idm_layout *l, uint64_t id,
                                 idm_decoded *out);

/*
 * Build the id for wall time t (at or after the epoch; the tick is
 * floor((t - epoch) / tick)), node values by field index (entries for the
 * time and seq fields are ignored; node may be NULL for all zeros) and seq.
 * IDM_ERANGE with a detail naming the field that does not fit.
 */
IDM_EXTERN int idm_layout_compose(const idm_layout *l, idm_unix_ms t,
                                  const uint64_t *node, uint64_t seq,
                                  uint64_t *id);

/*
 * The ids whose time lies in [from, to): *min_id is the smallest, *max_id the
 * largest, so `WHERE id BETWEEN min AND max` (or `id >= min AND id < max+1`)
 * selects exactly them. An id's time is the start of its tick. IDM_ERANGE
 * if the window is empty, starts before the epoch or ends past
 * idm_layout_time_end.
 */
IDM_EXTERN int idm_layout_range(const idm_layout *l, idm_unix_ms from,
                                idm_unix_ms to, uint64_t *min_id,
                                uint64_t *max_id);

/*
 * Parse one "name=value" node assignment against l: sets node[index] and
 * bit index of *set. IDM_EINVAL for an unknown name or a time/seq field,
 * IDM_EPARSE for a malformed value, IDM_ERANGE for a value that does not fit.
 */
IDM_EXTERN int idm_layout_parse_node(const idm_layout *l, const char *assign,
                                     uint64_t *node, uint32_t *set);

#endif /* IDMINT_LAYOUT_H */
