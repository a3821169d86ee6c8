/* SPDX-License-Identifier: MIT */
/*
 * `idmint layout`: describe one layout (text form, epoch, tick, fields, ids
 * per tick and per second, when its time runs out and whether its ids turn
 * negative as signed 64-bit integers), or list the presets.
 */
#include "cli.h"

#include <string.h>

static const char usage_text[] =
    "usage: idmint layout [NAME|TEXT] [--epoch T] [--json]\n"
    "\n"
    "Describe a layout: its text form, epoch, tick, fields, capacity, when\n"
    "its time field runs out and whether its ids turn negative as signed\n"
    "64-bit integers. With no layout, list the presets.\n"
    "\n"
    "  NAME|TEXT              preset name or text form (--layout works too)\n"
    "      --epoch T          epoch, unix ms or ISO-8601 (needed for a text\n"
    "                         form; overrides a preset's)\n"
    "      --json             JSON output (the list: one object per line)\n"
    "  -h, --help             show this help\n";

static const cli_opt options[] = {CLI_ROW_HELP, CLI_ROWS_LAYOUT, CLI_ROW_JSON, CLI_ROW_END};

static const cli_spec spec = {"layout", usage_text, options, 1, 0, 0, NULL};

static const char *kind_name(idm_field_kind k)
{
    switch (k) {
    case IDM_FIELD_TIME:
        return "time";
    case IDM_FIELD_SEQ:
        return "seq";
    default:
        return "node";
    }
}

static int list_presets(bool json)
{
    for (const char *const *p = idm_layout_preset_names(); *p != NULL; p++) {
        idm_layout *l = NULL;
        int rc = idm_layout_preset(&l, *p);
        if (rc != 0) {
            cli_lib_error("layout", rc, "preset '%s'", *p);
            return CLI_FAIL;
        }
        char text[IDM_LAYOUT_TEXT_MAX];
        char epoch[IDM_TIME_TEXT_MAX];
        idm_layout_format(l, text, sizeof text);
        cli_time_or_far(idm_layout_epoch(l), epoch);
        long long ms = (long long)idm_layout_epoch(l);
        if (json)
            printf("{\"name\":\"%s\",\"text\":\"%s\",\"epoch_ms\":%lld,"
                   "\"epoch\":\"%s\"}\n", *p, text, ms, epoch);
        else
            printf("%-10s %-42s epoch %lld (%s)\n", *p, text, ms, epoch);
        idm_layout_free(l);
    }
    return CLI_OK;
}

/* ids one generator can mint per second; false if it does not fit. */
static bool per_second(const idm_layout *l, uint64_t per_tick, uint64_t *out)
{
    uint64_t tick = (uint64_t)idm_layout_tick_ms(l);
    if (tick == 0 || per_tick > UINT64_MAX / 1000)
        return false;
    *out = per_tick * 1000 / tick;
    return true;
}

static void describe_json(const idm_layout *l)
{
    char text[IDM_LAYOUT_TEXT_MAX];
    char buf[IDM_TIME_TEXT_MAX], jt[CLI_JSON_TIME_MAX];
    char num[CLI_U64_TEXT_MAX];
    idm_layout_format(l, text, sizeof text);
    idm_unix_ms epoch = idm_layout_epoch(l);
    uint64_t per_tick = UINT64_C(1) << idm_layout_seq_bits(l);

    printf("{\"name\":\"%s\",\"text\":\"%s\",\"epoch_ms\":%lld,"
           "\"epoch\":\"%s\",\"tick_ms\":%lld,\"bits\":%u,\"fields\":[",
           idm_layout_name(l), text, (long long)epoch,
           cli_time_or_far(epoch, buf), (long long)idm_layout_tick_ms(l),
           idm_layout_bits(l));
    size_t count = idm_layout_field_count(l);
    for (size_t i = 0; i < count; i++) {
        idm_field_info f;
        if (idm_layout_field(l, i, &f) != 0)
            continue;
        cli_u64_dec(f.max, num);
        printf("%s{\"name\":\"%s\",\"kind\":\"%s\",\"bits\":%u,\"shift\":%u,"
               "\"max\":%s}", i > 0 ? "," : "", f.name, kind_name(f.kind),
               f.bits, f.shift, num);
    }
    cli_u64_dec(per_tick, num);
    printf("],\"ids_per_tick\":%s", num);
    uint64_t ps;
    if (per_second(l, per_tick, &ps)) {
        cli_u64_dec(ps, num);
        printf(",\"ids_per_second\":%s", num);
    } else {
        printf(",\"ids_per_second\":null");
    }
    idm_unix_ms end = idm_layout_time_end(l);
    printf(",\"time_end_ms\":%lld,\"time_end\":%s", (long long)end, cli_json_time(end, jt));
    idm_unix_ms from = 0;
    if (!idm_layout_sign_bit(l, &from))
        printf(",\"sign_bit\":false,\"negative_from_ms\":null,"
               "\"negative_from\":null}\n");
    else
        printf(",\"sign_bit\":true,\"negative_from_ms\":%lld,"
               "\"negative_from\":%s}\n", (long long)from, cli_json_time(from, jt));
}

static void describe_text(const idm_layout *l)
{
    char text[IDM_LAYOUT_TEXT_MAX];
    char buf[IDM_TIME_TEXT_MAX];
    char num[CLI_U64_TEXT_MAX];
    idm_layout_format(l, text, sizeof text);
    idm_unix_ms epoch = idm_layout_epoch(l);
    unsigned seq_bits = idm_layout_seq_bits(l);
    uint64_t per_tick = UINT64_C(1) << seq_bits;

    printf("layout:   %s\n", idm_layout_name(l));
    printf("text:     %s\n", text);
    printf("epoch:    %lld (%s)\n", (long long)epoch, cli_time_or_far(epoch, buf));
    printf("tick:     %lld ms\n", (long long)idm_layout_tick_ms(l));
    printf("bits:     %u of 64\n", idm_layout_bits(l));
    printf("fields:\n");
    printf("  %-16s %-5s %4s %5s  %s\n", "name", "kind", "bits", "shift",
           "max");
    size_t count = idm_layout_field_count(l);
    for (size_t i = 0; i < count; i++) {
        idm_field_info f;
        if (idm_layout_field(l, i, &f) != 0)
            continue;
        cli_u64_dec(f.max, num);
        printf("  %-16s %-5s %4u %5u  %s\n", f.name, kind_name(f.kind),
               f.bits, f.shift, num);
    }
    cli_u64_dec(per_tick, num);
    printf("ids per tick per generator:   %s (2^%u)\n", num, seq_bits);
    uint64_t ps;
    if (per_second(l, per_tick, &ps)) {
        cli_u64_dec(ps, num);
        printf("ids per second per generator: %s\n", num);
    }
    idm_unix_ms end = idm_layout_time_end(l);
    printf("time runs out: %s (unix ms %lld)\n", cli_time_or_far(end, buf),
           (long long)end);
    idm_unix_ms from = 0;
    if (idm_layout_sign_bit(l, &from)) {
        printf("sign bit: USED: ids read as signed 64-bit integers (Java "
               "long, SQL bigint) are negative from %s (unix ms %lld)\n",
               cli_time_or_far(from, buf), (long long)from);
    } else {
        printf("sign bit: not used: ids stay positive as signed 64-bit "
               "integers\n");
    }
}

int cli_cmd_layout(int argc, char **argv)
{
    cli_args a;
    int status = cli_parse_args(&spec, argc, argv, &a, NULL);
    if (status != CLI_OK || a.help)
        return status;
    bool json = cli_given(&a, CLI_ID_JSON);
    if (a.pos_count > 0 && a.opt[CLI_ID_LAYOUT] != NULL) {
        cli_error("layout", "give the layout once: '%s' or --layout '%s'", a.pos[0],
                  a.opt[CLI_ID_LAYOUT]);
        return CLI_USAGE;
    }
    if (a.pos_count > 0)
        a.opt[CLI_ID_LAYOUT] = a.pos[0];
    if (a.opt[CLI_ID_LAYOUT] == NULL) {
        if (a.opt[CLI_ID_EPOCH] != NULL) {
            cli_error("layout", "--epoch needs a layout to apply to");
            return CLI_USAGE;
        }
        return list_presets(json);
    }

    idm_layout *l = NULL;
    status = cli_build_layout("layout", &a, &l);
    if (status != CLI_OK)
        return status;
    if (json)
        describe_json(l);
    else
        describe_text(l);
    idm_layout_free(l);
    return CLI_OK;
}
