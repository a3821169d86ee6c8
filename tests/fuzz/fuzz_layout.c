/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: layout text, node assignments and ids. Input bytes up to the
 * first 0x00 are a layout spec; the next NUL-terminated piece is a node
 * assignment; the last 8 bytes, if any, an id. Whatever parses must round
 * trip: format then parse gives the same text, decode then compose gives the
 * same id. Anything that fails must fail with an error code and a detail.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <idmint/idmint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 2);
    const char *spec, *assign;
    idm_layout *l, *again;
    char text[IDM_LAYOUT_TEXT_MAX], text2[IDM_LAYOUT_TEXT_MAX];
    uint64_t id = 0, node[IDM_LAYOUT_MAX_FIELDS] = {0}, back;
    uint32_t set = 0;
    idm_decoded d;
    int rc;

    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = '\0';
    spec = buf;
    assign = buf + strlen(buf) + 1;
    if (assign > buf + size)
        assign = "";
    if (size >= 8)
        memcpy(&id, data + size - 8, 8);

    rc = idm_layout_from_spec(&l, spec, strchr(spec, ':') != NULL ? "1288834974657" : NULL);
    if (rc != 0) {
        if (rc >= 0 || idm_error_detail()[0] == '\0')
            abort();
        free(buf);
        return 0;
    }
    if (idm_layout_format(l, text, sizeof text) != 0 || idm_layout_parse(&again, text, idm_layout_epoch(l)) != 0)
        abort();
    if (idm_layout_format(again, text2, sizeof text2) != 0 || strcmp(text, text2) != 0)
        abort();
    if (idm_layout_bits(l) > 64 || idm_layout_bits(again) != idm_layout_bits(l))
        abort();
    idm_layout_free(again);

    rc = idm_layout_parse_node(l, assign, node, &set);
    if (rc != 0 && (set != 0 || idm_error_detail()[0] == '\0'))
        abort(); /* a failed assignment must leave the mask alone */

    if (idm_layout_bits(l) < 64)
        id &= (UINT64_C(1) << idm_layout_bits(l)) - 1;
    if (idm_layout_decode(l, id, &d) != 0)
        abort();
    if (idm_layout_compose(l, d.unix_ms, d.value, d.seq, &back) != 0 || back != id)
        abort();
    free(buf);
    idm_layout_free(l);
    return 0;
}
