/* SPDX-License-Identifier: MIT */
/* The layout's representation, shared by layout.c and the generator. */
#ifndef IDM_LAYOUT_INTERNAL_H
#define IDM_LAYOUT_INTERNAL_H

#include <idmint/layout.h>

struct idm__field {
    char name[IDM_FIELD_NAME_MAX + 1];
    idm_field_kind kind;
    unsigned bits;
    unsigned shift;
    uint64_t max;
};

struct idm_layout {
    char name[16];         /* preset name or "custom" */
    idm_unix_ms epoch;
    int64_t tick_ms;
    unsigned nfields;
    unsigned bits;         /* total */
    int time_index;
    int seq_index;
    unsigned time_bits, time_shift;
    unsigned seq_bits, seq_shift;
    uint64_t max_tick;
    idm_unix_ms time_end;  /* first Unix ms the time field cannot hold */
    struct idm__field f[IDM_LAYOUT_MAX_FIELDS];
};

#endif /* IDM_LAYOUT_INTERNAL_H */
