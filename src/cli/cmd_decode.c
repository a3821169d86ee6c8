/* SPDX-License-Identifier: MIT */
/*
 * `idmint decode`: split ids into their parts. Snowflake-style ids give
 * their time and fields; UUIDs their version, variant and (version 7) time;
 * ULIDs their time and UUID form; ObjectIds their time, process value and
 * counter. Each argument's kind is told from its form unless --kind names
 * it. Every argument is checked before anything is printed, so bad input
 * prints no partial result.
 */
#include "cli.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char usage_text[] =
    "usage: idmint decode ID... [--kind KIND] [--layout NAME|TEXT] [--epoch T]\n"
    "                     [--json]\n"
    "\n"
    "Print each ID's parts, one line per id:\n"
    "  ID time=ISO-8601 unix_ms=MS FIELD=VALUE...     (Snowflake-style)\n"
    "  UUID kind=uuid version=V variant=VARIANT [time=ISO-8601 unix_ms=MS]\n"
    "  ULID kind=ulid time=ISO-8601 unix_ms=MS uuid=UUID\n"
    "  OBJECTID kind=objectid time=ISO-8601 unix_ms=MS process=HEX counter=N\n"
    "\n"
    "  ID                     each id's kind is told from its form:\n"
    "                         decimal, or 0x and 1 to 16 hex digits: a\n"
    "                         Snowflake-style id\n"
    "                         36 characters with dashes: a UUID (8-4-4-4-12\n"
    "                         hex digits)\n"
    "                         26 characters: a ULID (Crockford base32)\n"
    "                         24 letters and digits: an ObjectId (24 hex\n"
    "                         digits)\n"
    "                         (decimal ids of 24 or 26 digits: see --kind)\n"
    "      --kind KIND        take every ID as KIND: snowflake, uuid, ulid or\n"
    "                         objectid\n"
    CLI_HELP_LAYOUT
    "      --json             one JSON object per line\n"
    "  -h, --help             show this help\n"
    "\n"
    "--layout and --epoch apply to Snowflake-style ids only.\n";

enum { OPT_KIND = CLI_ID_OWN };

static const cli_opt options[] = {
    CLI_ROW_HELP, CLI_ROWS_LAYOUT, CLI_ROW_JSON, {"kind", 0, true, OPT_KIND}, CLI_ROW_END,
};

static const cli_spec spec = {"decode", usage_text, options, CLI_POS_ANY, 0, 0, NULL};

/* In the order of --kind's names. */
typedef enum id_kind {
    KIND_SNOWFLAKE,
    KIND_UUID,
    KIND_ULID,
    KIND_OBJECTID,
    KIND_AUTO
} id_kind;

static const char *const kind_names[] = {"snowflake", "uuid", "ulid", "objectid", NULL};

/* One argument, parsed. */
typedef struct parsed_id {
    id_kind kind;
    uint64_t snowflake;
    idm_decoded dec; /* the snowflake's fields */
    uint8_t b[16];   /* the bytes of a UUID, ULID (16) or ObjectId (12) */
} parsed_id;

/* ASCII letters and digits only: the program keeps the C locale. */
static bool all_alnum(const char *s)
{
    for (; *s != '\0'; s++) {
        if (!isalnum((unsigned char)*s))
            return false;
    }
    return true;
}

static bool all_decimal(const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9')
            return false;
    }
    return true;
}

/*
 * A UUID written some other way than the canonical text (braces, a
 * "urn:uuid:" prefix, dashes missing or misplaced, a character too many or
 * too few, spaces): taken as a UUID so that the error says what is wrong
 * with it. Decimal digits alone stay a Snowflake-style id.
 */
static bool near_uuid(const char *s)
{
    if (s[0] == '{' || strncasecmp(s, "urn:uuid:", 9) == 0)
        return true;
    size_t len = strlen(s);
    return len >= 30 && len <= 40 && !all_decimal(s);
}

/* The kind of an argument, from its form (see the usage text). */
static id_kind detect_kind(const char *s)
{
    size_t len = strlen(s);
    /* "0x" and up to 16 hex digits; longer, "0X..." may be a ULID (26
     * characters) whose time lies in the years 2980 to 3015. */
    if (len <= 18 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return KIND_SNOWFLAKE;
    if (len == 36 && strchr(s, '-') != NULL)
        return KIND_UUID;
    if (len == 26)
        return KIND_ULID;
    /* Letters past f too: an ObjectId with a typo, named as such. */
    if (len == 24 && all_alnum(s))
        return KIND_OBJECTID;
    if (near_uuid(s))
        return KIND_UUID;
    return KIND_SNOWFLAKE;
}

/* Parse text as the given kind into *out; prints the error and returns
 * CLI_USAGE if it is not one. */
static int parse_one(const char *text, id_kind kind, const idm_layout *l,
                     parsed_id *out)
{
    out->kind = kind;
    const char *what = "ID";
    int rc = 0;
    switch (kind) {
    case KIND_UUID: {
        idm_uuid u;
        what = "UUID";
        if ((rc = idm_uuid_parse(text, &u)) == 0)
            memcpy(out->b, u.b, sizeof u.b);
        break;
    }
    case KIND_ULID: {
        idm_ulid u;
        what = "ULID";
        if ((rc = idm_ulid_parse(text, &u)) == 0)
            memcpy(out->b, u.b, sizeof u.b);
        break;
    }
    case KIND_OBJECTID: {
        idm_objectid o;
        what = "ObjectId";
        if ((rc = idm_objectid_parse(text, &o)) == 0)
            memcpy(out->b, o.b, sizeof o.b);
        break;
    }
    case KIND_AUTO:
    case KIND_SNOWFLAKE:
        out->kind = KIND_SNOWFLAKE;
        if ((rc = idm_u64_parse(text, &out->snowflake)) != 0)
            break;
        rc = idm_layout_decode(l, out->snowflake, &out->dec);
        if (rc == IDM_ERANGE) {
            char label[IDM_LAYOUT_TEXT_MAX];
            cli_layout_label(l, label, sizeof label);
            cli_error("decode", "bad ID '%s': it has bits above the %u bits "
                      "of layout %s", text, idm_layout_bits(l), label);
            return CLI_USAGE;
        }
        break;
    }
    if (rc != 0) {
        cli_lib_error("decode", rc, "bad %s '%s'", what, text);
        return CLI_USAGE;
    }
    return CLI_OK;
}

static const char *variant_name(int variant)
{
    switch (variant) {
    case IDM_UUID_VARIANT_NCS:
        return "ncs";
    case IDM_UUID_VARIANT_RFC:
        return "rfc9562";
    case IDM_UUID_VARIANT_MICROSOFT:
        return "microsoft";
    default:
        return "future";
    }
}

/* The start of a line: 'ID kind=KIND' or '{"id":"ID","kind":"KIND"'. */
static void print_head(FILE *out, const char *id, const char *kind, bool json)
{
    if (json)
        fprintf(out, "{\"id\":\"%s\",\"kind\":\"%s\"", id, kind);
    else
        fprintf(out, "%s kind=%s", id, kind);
}

static void print_uuid(FILE *out, const uint8_t *b, bool json)
{
    idm_uuid u;
    memcpy(u.b, b, sizeof u.b);
    char text[IDM_UUID_TEXT_MAX];
    idm_uuid_format(&u, text);
    int version = idm_uuid_version(&u);
    const char *variant = variant_name(idm_uuid_variant(&u));
    print_head(out, text, "uuid", json);
    if (json)
        fprintf(out, ",\"version\":%d,\"variant\":\"%s\"", version, variant);
    else
        fprintf(out, " version=%d variant=%s", version, variant);
    idm_unix_ms ms;
    if (idm_uuid7_time(&u, &ms) == 0)
        cli_print_time(out, ms, json);
}

static void print_ulid(FILE *out, const uint8_t *b, bool json)
{
    idm_ulid u;
    memcpy(u.b, b, sizeof u.b);
    char text[IDM_ULID_TEXT_MAX];
    idm_ulid_format(&u, text);
    idm_uuid as_uuid;
    idm_ulid_to_uuid(&u, &as_uuid);
    char uuid_text[IDM_UUID_TEXT_MAX];
    idm_uuid_format(&as_uuid, uuid_text);
    print_head(out, text, "ulid", json);
    cli_print_time(out, idm_ulid_time(&u), json);
    if (json)
        fprintf(out, ",\"uuid\":\"%s\"", uuid_text);
    else
        fprintf(out, " uuid=%s", uuid_text);
}

static void print_objectid(FILE *out, const uint8_t *b, bool json)
{
    idm_objectid o;
    memcpy(o.b, b, sizeof o.b);
    char text[IDM_OBJECTID_TEXT_MAX];
    idm_objectid_format(&o, text);
    char process[11];
    cli_hex_bytes(o.b + 4, 5, process);
    uint32_t counter = (uint32_t)o.b[9] << 16 | (uint32_t)o.b[10] << 8 | o.b[11];
    print_head(out, text, "objectid", json);
    cli_print_time(out, idm_objectid_time(&o), json);
    if (json)
        fprintf(out, ",\"process\":\"%s\",\"counter\":%lu", process,
                (unsigned long)counter);
    else
        fprintf(out, " process=%s counter=%lu", process,
                (unsigned long)counter);
}

static void print_one(FILE *out, const idm_layout *l, const parsed_id *p,
                      bool json)
{
    switch (p->kind) {
    case KIND_UUID:
        print_uuid(out, p->b, json);
        break;
    case KIND_ULID:
        print_ulid(out, p->b, json);
        break;
    case KIND_OBJECTID:
        print_objectid(out, p->b, json);
        break;
    case KIND_AUTO:
    case KIND_SNOWFLAKE:
        cli_print_decoded(out, l, p->snowflake, &p->dec, json);
        return; /* it ends its own line */
    }
    fputs(json ? "}\n" : "\n", out);
}

/* The arguments against the options before anything is parsed: the kind
 * they are all taken as (KIND_AUTO: each by its form), or -1 after
 * printing why. */
static int check_args(const cli_args *a)
{
    const char *kind_text = a->opt[OPT_KIND];
    int forced = cli_choice("decode", "--kind", kind_text, kind_names, KIND_AUTO);
    if (forced < 0)
        return -1;
    if (a->pos_count == 0) {
        cli_error("decode", "no ID given (try 'idmint decode --help')");
        return -1;
    }
    if (forced != KIND_AUTO && forced != KIND_SNOWFLAKE &&
        (cli_given(a, CLI_ID_LAYOUT) || cli_given(a, CLI_ID_EPOCH))) {
        cli_error("decode", "--%s applies to Snowflake-style ids only, not "
                  "to --kind %s", cli_given(a, CLI_ID_LAYOUT) ? "layout" : "epoch",
                  kind_text);
        return -1;
    }
    return forced;
}

int cli_cmd_decode(int argc, char **argv)
{
    cli_args a;
    int status = cli_parse_args(&spec, argc, argv, &a, NULL);
    if (status != CLI_OK || a.help)
        return status;
    int forced = check_args(&a);
    if (forced < 0)
        return CLI_USAGE;

    size_t n = a.pos_count;
    idm_layout *l = NULL;
    status = cli_build_layout("decode", &a, &l);
    parsed_id *ids = NULL;
    if (status == CLI_OK) {
        ids = calloc(n, sizeof *ids);
        if (ids == NULL) {
            cli_error("decode", "out of memory");
            status = CLI_FAIL;
        }
    }
    for (size_t i = 0; status == CLI_OK && i < n; i++) {
        id_kind kind = forced != KIND_AUTO ? (id_kind)forced : detect_kind(a.pos[i]);
        status = parse_one(a.pos[i], kind, l, &ids[i]);
    }
    bool json = cli_given(&a, CLI_ID_JSON);
    for (size_t i = 0; status == CLI_OK && i < n; i++)
        print_one(cli_out(), l, &ids[i], json);

    free(ids);
    idm_layout_free(l);
    return status;
}
