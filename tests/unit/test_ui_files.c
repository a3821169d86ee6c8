/* SPDX-License-Identifier: MIT */
/*
 * The web console's files as idmintd embeds them (src/server/ui/, through
 * ui.h's idmd_ui_file and the C file cmake/embed_ui.cmake writes): every
 * file there with its media type, a bare name and nothing else found; the
 * bytes end with a NUL past their length (the generator adds it; it lets
 * these checks read a file as a C string). Then what the pages promise, read
 * in their text: the index links to every page; no file names an http(s)
 * URL (the SVG namespace aside: a name, never fetched), a font file or
 * @import (the console works offline); no inline script, style element or
 * style attribute, event handler attribute or javascript: URL in the HTML
 * (the Content-Security-Policy would block them); no eval in the scripts;
 * each page loads console.css, console.js and then its own script, has the
 * placeholders console.js fills with the header and the error area (and
 * none of what it fills in, which would then stand twice) and the ids the
 * browser tests use (the contract's DOM section); console.js builds the
 * navigation to every page, with the current one marked, the error area and
 * the token form, before any page script runs; every input and select has a
 * <label for> naming it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "ui.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define HTML "text/html; charset=utf-8"
#define CSS "text/css; charset=utf-8"
#define JS "text/javascript; charset=utf-8"

static const struct {
    const char *name;
    const char *type;
} files[] = {
    {"index.html", HTML},     {"planner.html", HTML}, {"estimator.html", HTML},
    {"collisions.html", HTML}, {"decoder.html", HTML}, {"status.html", HTML},
    {"console.css", CSS},     {"console.js", JS},     {"planner.js", JS},
    {"estimator.js", JS},     {"collisions.js", JS},  {"decoder.js", JS},
    {"status.js", JS},        {"favicon.svg", "image/svg+xml"},
};

static const char *const pages[] = {"index.html",      "planner.html", "estimator.html",
                                    "collisions.html", "decoder.html", "status.html"};

/* The embedded file's text (it is NUL-terminated); fails the test if there
 * is none. Not inlined: GCC's -Wdangling-pointer then takes the text for
 * the address of the local it was returned through. */
__attribute__((noinline)) static const char *text_of(const char *name)
{
    const unsigned char *data = NULL;
    size_t len = 0;
    const char *type = NULL;
    if (!idmd_ui_file(name, &data, &len, &type))
        fail_msg("no embedded console file '%s'", name);
    return (const char *)data;
}

static void expect_has(const char *file, const char *text, const char *needle)
{
    if (strstr(text, needle) == NULL)
        fail_msg("%s does not contain '%s'", file, needle);
}

static void expect_lacks(const char *file, const char *text, const char *needle)
{
    const char *at = strcasestr(text, needle);
    if (at != NULL)
        fail_msg("%s contains '%s' at byte %zu: '%.60s'", file, needle, (size_t)(at - text), at);
}

/* The start tag holding attr (e.g. id="rate"), copied to buf, or fails. */
static const char *tag_with(const char *file, const char *text, const char *attr, char *buf,
                            size_t len)
{
    const char *at = strstr(text, attr);
    if (at == NULL)
        fail_msg("%s has no element with %s", file, attr);
    const char *start = at;
    while (start > text && *start != '<')
        start--;
    const char *end = strchr(at, '>');
    assert_non_null(end);
    size_t n = (size_t)(end - start + 1);
    assert_true(n < len);
    memcpy(buf, start, n);
    buf[n] = '\0';
    return buf;
}

/* The element with attr must carry each of the NULL-ended attributes. */
static void expect_tag(const char *file, const char *text, const char *attr, ...)
{
    char buf[1024];
    tag_with(file, text, attr, buf, sizeof buf);
    va_list ap;
    va_start(ap, attr);
    for (const char *want = va_arg(ap, const char *); want != NULL;
         want = va_arg(ap, const char *)) {
        if (strstr(buf, want) == NULL) {
            va_end(ap);
            fail_msg("%s: the element with %s lacks %s: %s", file, attr, want, buf);
        }
    }
    va_end(ap);
}

/* ---- the table ---- */

static void test_files_and_types(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(files); i++) {
        const unsigned char *data = NULL;
        size_t len = 0;
        const char *type = NULL;
        if (!idmd_ui_file(files[i].name, &data, &len, &type))
            fail_msg("no embedded console file '%s'", files[i].name);
        assert_non_null(data);
        assert_true(len > 100);
        assert_string_equal(type, files[i].type);
        /* A NUL past the end and none inside: the text files are text. */
        assert_int_equal(data[len], 0);
        assert_int_equal(strlen((const char *)data), len);
        expect_has(files[i].name, (const char *)data, "SPDX-License-Identifier: MIT");
    }
}

static void test_unknown_names(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", "nope.html", "index.htm", "index.html.", "Index.html", "INDEX.HTML", "/index.html",
        "index.html/", "../index.html", "./index.html", "ui/index.html", " index.html", "console",
        "zzz.js", "a",
    };
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        const unsigned char *data = (const unsigned char *)"x";
        size_t len = 7;
        const char *type = "x";
        if (idmd_ui_file(bad[i], &data, &len, &type))
            fail_msg("'%s' found", bad[i]);
    }
    const unsigned char *data;
    size_t len;
    const char *type;
    assert_false(idmd_ui_file(NULL, &data, &len, &type));
}

/* ---- offline, and within the Content-Security-Policy ---- */

static void test_index_links_every_page(void **state)
{
    (void)state;
    const char *index = text_of("index.html");
    char href[64];
    for (size_t i = 1; i < ARRAY_LEN(pages); i++) {
        /* In the body, beyond the navigation every page has. */
        const char *main = strstr(index, "<main id=\"main\">");
        assert_non_null(main);
        snprintf(href, sizeof href, "href=\"%s\"", pages[i]);
        expect_has("index.html's <main>", main, href);
    }
}

static void test_nothing_external(void **state)
{
    (void)state;
    static const char *const banned[] = {
        "https://", "src=\"//", "href=\"//", "url(", "@import", "@font-face", ".woff",
        ".ttf", ".otf", ".eot", "fonts.googleapis", "cdn.",
    };
    for (size_t i = 0; i < ARRAY_LEN(files); i++) {
        const char *t = text_of(files[i].name);
        for (size_t b = 0; b < ARRAY_LEN(banned); b++)
            expect_lacks(files[i].name, t, banned[b]);
        /* http:// only as the SVG namespace's name. */
        for (const char *p = strcasestr(t, "http://"); p != NULL; p = strcasestr(p + 1, "http://")) {
            if (strncmp(p, "http://www.w3.org/2000/svg", 26) != 0)
                fail_msg("%s names an http URL: '%.60s'", files[i].name, p);
        }
    }
}

static void test_no_inline_code_or_style(void **state)
{
    (void)state;
    static const char *const banned[] = {
        " style=", "<style", "javascript:", " onclick=", " onload=", " onsubmit=", " oninput=",
        " onchange=", " onerror=", " onkeydown=", " onfocus=",
    };
    for (size_t i = 0; i < ARRAY_LEN(pages); i++) {
        const char *t = text_of(pages[i]);
        for (size_t b = 0; b < ARRAY_LEN(banned); b++)
            expect_lacks(pages[i], t, banned[b]);
        /* Every <script> has a src and an empty body. */
        for (const char *p = strstr(t, "<script"); p != NULL; p = strstr(p + 1, "<script")) {
            const char *end = strchr(p, '>');
            assert_non_null(end);
            if (memmem(p, (size_t)(end - p), " src=\"", 6) == NULL)
                fail_msg("%s: a <script> without src: '%.60s'", pages[i], p);
            if (strncmp(end, "></script>", 10) != 0)
                fail_msg("%s: a <script> with a body: '%.60s'", pages[i], p);
        }
    }
    static const char *const scripts[] = {"console.js", "planner.js", "estimator.js",
                                          "collisions.js", "decoder.js", "status.js"};
    for (size_t i = 0; i < ARRAY_LEN(scripts); i++) {
        const char *t = text_of(scripts[i]);
        expect_lacks(scripts[i], t, "eval(");
        expect_lacks(scripts[i], t, "new Function");
        expect_lacks(scripts[i], t, "innerHTML");
        expect_lacks(scripts[i], t, "document.write");
        expect_has(scripts[i], t, "'use strict';");
    }
}

/* ---- what every page has ---- */

static void test_every_page_frame(void **state)
{
    (void)state;
    char buf[128];
    for (size_t i = 0; i < ARRAY_LEN(pages); i++) {
        const char *name = pages[i];
        const char *t = text_of(name);
        expect_has(name, t, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
        expect_has(name, t, "<link rel=\"stylesheet\" href=\"console.css\">");
        expect_has(name, t, "<link rel=\"icon\" href=\"favicon.svg\"");
        /* console.js, then the page's own script (the index has none). */
        const char *shared = strstr(t, "<script src=\"console.js\"");
        if (shared == NULL)
            fail_msg("%s does not load console.js", name);
        if (i > 0) {
            char own[64];
            snprintf(own, sizeof own, "<script src=\"%.*s.js\"", (int)(strlen(name) - 5), name);
            const char *mine = strstr(t, own);
            if (mine == NULL || mine < shared)
                fail_msg("%s does not load %s after console.js", name, own);
        }
        /* The placeholders console.js fills, in this order between the
         * skip link (the first Tab) and <main>: so Tab goes from the skip
         * link to the navigation, then the token form, then the page. */
        const char *skip = strstr(t, "<a class=\"skip\" href=\"#main\">");
        const char *top = strstr(t, "<header class=\"top\" id=\"top\"></header>");
        const char *wrap = strstr(t, "<div class=\"errwrap\" id=\"errwrap\"></div>");
        const char *main = strstr(t, "<main id=\"main\">");
        if (skip == NULL || top == NULL || wrap == NULL || main == NULL)
            fail_msg("%s lacks the skip link, <header class=\"top\" id=\"top\"></header>, "
                     "<div class=\"errwrap\" id=\"errwrap\"></div> or <main id=\"main\">",
                     name);
        if (!(skip < top && top < wrap && wrap < main))
            fail_msg("%s: not in the order skip link, #top, #errwrap, <main>", name);
        /* What console.js builds is not in the page as well. */
        static const char *const built[] = {
            "<nav", "id=\"nav\"", "id=\"error\"", "id=\"token-form\"", "id=\"token-input\"",
            "id=\"token-submit\"", "id=\"token-note\"", "aria-current=",
        };
        for (size_t b = 0; b < ARRAY_LEN(built); b++)
            expect_lacks(name, t, built[b]);
        snprintf(buf, sizeof buf, "['%s', '", name);
        expect_has("console.js's PAGES", text_of("console.js"), buf);
    }
}

/* console.js's frame: the one list of pages (every page once), the
 * navigation marking the current one, the error area and the token form
 * with the ids, labels and classes the CSS and the browser tests use, built
 * when the script runs (before the page's own script) into the
 * placeholders. */
static void test_console_js_frame(void **state)
{
    (void)state;
    const char *f = "console.js";
    const char *t = text_of(f);
    const char *list = strstr(t, "const PAGES = [");
    if (list == NULL)
        fail_msg("console.js has no 'const PAGES = ['");
    const char *list_end = strstr(list, "];");
    assert_non_null(list_end);
    char buf[64];
    for (size_t i = 0; i < ARRAY_LEN(pages); i++) {
        snprintf(buf, sizeof buf, "['%s', '", pages[i]);
        const char *at = strstr(list, buf);
        if (at == NULL || at > list_end)
            fail_msg("console.js's PAGES lacks %s", buf);
        if (strstr(at + 1, buf) != NULL)
            fail_msg("console.js names %s twice", buf);
    }
    /* Only pages embedded: as many entries as pages. */
    size_t entries = 0;
    for (const char *p = strstr(list, "\n    ['"); p != NULL && p < list_end;
         p = strstr(p + 1, "\n    ['"))
        entries++;
    assert_int_equal(entries, ARRAY_LEN(pages));
    /* The current page by the path, /ui/ being the index. */
    expect_has(f, t, "return last === '' ? 'index.html' : last;");
    expect_has(f, t, "if (href === here) link.setAttribute('aria-current', 'page');");
    expect_has(f, t, "frameElement('nav', { id: 'nav', 'aria-label': 'Console pages' }, list)");
    expect_has(f, t, "frameElement('div', { className: 'top-inner' }, brand, nav)");
    expect_has(f, t, "frameElement('a', { className: 'brand', href: 'index.html' },");
    expect_has(f, t, "frameElement('div', { id: 'error', role: 'alert', hidden: true })");
    expect_has(f, t, "frameElement('form', { id: 'token-form', hidden: true },");
    expect_has(f, t, "id: 'token-input', type: 'password',");
    expect_has(f, t,
               "frameElement('label', { htmlFor: 'token-input', textContent: 'Bearer token' })");
    expect_has(f, t,
               "frameElement('button', { id: 'token-submit', className: 'primary', type: 'submit',");
    expect_has(f, t, "document.getElementById('top')");
    expect_has(f, t, "document.getElementById('errwrap')");
    /* Built as the script runs, before IDM (and so before any page script
     * or DOMContentLoaded). */
    const char *call = strstr(t, "\n  buildFrame();\n})();\n");
    const char *idm = strstr(t, "const IDM = (");
    if (call == NULL || idm == NULL || call > idm)
        fail_msg("console.js does not call buildFrame() at its top level, before IDM");
}

/* Every <input>, <select> and <textarea> has an id and a <label for> it. */
static void test_every_control_labelled(void **state)
{
    (void)state;
    static const char *const controls[] = {"<input", "<select", "<textarea"};
    for (size_t i = 0; i < ARRAY_LEN(pages); i++) {
        const char *t = text_of(pages[i]);
        for (size_t c = 0; c < ARRAY_LEN(controls); c++) {
            for (const char *p = strstr(t, controls[c]); p != NULL;
                 p = strstr(p + 1, controls[c])) {
                const char *end = strchr(p, '>');
                assert_non_null(end);
                const char *id = memmem(p, (size_t)(end - p), " id=\"", 5);
                if (id == NULL)
                    fail_msg("%s: a control without an id: '%.60s'", pages[i], p);
                id += 5;
                const char *q = strchr(id, '"');
                char label[128];
                snprintf(label, sizeof label, "<label for=\"%.*s\"", (int)(q - id), id);
                if (strstr(t, label) == NULL)
                    fail_msg("%s: no %s>", pages[i], label);
            }
        }
    }
    /* The planner's rows are made by its script: a label for each too. */
    const char *js = text_of("planner.js");
    expect_has("planner.js", js, "label.htmlFor = 'range-' + f.name;");
    expect_has("planner.js", js, "numLabel.htmlFor = num.id;");
}

/* ---- each page's ids (the contract's DOM section) ---- */

static void test_planner_ids(void **state)
{
    (void)state;
    const char *f = "planner.html";
    const char *t = text_of(f);
    static const char *const presets[] = {"twitter", "discord", "instagram", "sonyflake"};
    char buf[64];
    for (size_t i = 0; i < ARRAY_LEN(presets); i++) {
        snprintf(buf, sizeof buf, "data-preset=\"%s\"", presets[i]);
        expect_tag(f, t, buf, "<button ", "type=\"button\"", NULL);
    }
    expect_tag(f, t, "id=\"tick\"", "type=\"number\"", NULL);
    expect_tag(f, t, "id=\"epoch\"", "type=\"text\"", NULL);
    expect_tag(f, t, "id=\"workers\"", "type=\"number\"", NULL);
    expect_tag(f, t, "id=\"peak\"", "type=\"number\"", NULL);
    expect_tag(f, t, "id=\"layout-text\"", "<output", NULL);
    expect_tag(f, t, "id=\"layout-epoch\"", "<output", NULL);
    static const char *const keys[] = {
        "time_end", "years_left", "span_years", "worker_ids", "ids_per_second_per_worker",
        "ids_per_second_fleet", "over_2_53_from", "negative_from", "example.id",
    };
    for (size_t i = 0; i < ARRAY_LEN(keys); i++) {
        snprintf(buf, sizeof buf, "data-key=\"%s\"", keys[i]);
        expect_has(f, t, buf);
    }
    expect_has(f, t, "id=\"chip-lifespan\"");
    expect_has(f, t, "id=\"chip-workers\"");
    expect_has(f, t, "id=\"chip-peak\"");
    /* The rows: a range and a number per field, data-field and
     * data-part="bits" on each, made by the script. */
    const char *js = text_of("planner.js");
    expect_has("planner.js", js, "el.dataset.field = f.name;");
    expect_has("planner.js", js, "el.dataset.part = 'bits';");
    expect_has("planner.js", js, "bitsInput(f, 'range')");
    expect_has("planner.js", js, "bitsInput(f, 'number')");
}

static void test_estimator_ids(void **state)
{
    (void)state;
    const char *f = "estimator.html";
    const char *t = text_of(f);
    /* The reference case is the default. */
    expect_tag(f, t, "id=\"rate\"", "type=\"number\"", "value=\"200000\"", NULL);
    expect_tag(f, t, "id=\"processes\"", "type=\"number\"", "value=\"400\"", NULL);
    expect_tag(f, t, "id=\"skew\"", "type=\"number\"", "value=\"5\"", NULL);
    expect_tag(f, t, "id=\"surge\"", "type=\"number\"", "value=\"2\"", NULL);
    expect_tag(f, t, "id=\"rows\"", "type=\"number\"", "value=\"100000000000\"", NULL);
    expect_tag(f, t, "id=\"indexes\"", "type=\"number\"", "value=\"1\"", NULL);
    expect_tag(f, t, "id=\"layout\"", "<select", NULL);
    expect_tag(f, t, "<option value=\"twitter\"", " selected", NULL);
    expect_has(f, t, "<option value=\"sonyflake\">");
    static const char *const keys[] = {"busiest_ids_per_ms", "seq_share_pct",
                                       "worker_ids_in_use_pct", "lifespan_years",
                                       "bytes_saved_total"};
    char buf[64];
    for (size_t i = 0; i < ARRAY_LEN(keys); i++) {
        snprintf(buf, sizeof buf, "data-key=\"%s\"", keys[i]);
        expect_has(f, t, buf);
    }
    expect_has(f, t, "id=\"warnings\"");
}

static void test_collisions_ids(void **state)
{
    (void)state;
    const char *f = "collisions.html";
    const char *t = text_of(f);
    expect_tag(f, t, "id=\"rate\"", "type=\"range\"", "min=\"0\"", "max=\"9\"", "step=\"0.1\"",
               NULL);
    expect_tag(f, t, "id=\"rate-value\"", "<output", NULL);
    expect_tag(f, t, "id=\"chart\"", "<svg", "role=\"img\"", "aria-label=\"", NULL);
    expect_tag(f, t, "id=\"schemes\"", "<table", NULL);
    const char *js = text_of("collisions.js");
    static const char *const schemes[] = {"random32", "random64", "uuid7", "uuid4", "ulid"};
    char buf[64];
    for (size_t i = 0; i < ARRAY_LEN(schemes); i++) {
        snprintf(buf, sizeof buf, "<tr data-scheme=\"%s\">", schemes[i]);
        expect_has(f, t, buf);
        snprintf(buf, sizeof buf, "id: '%s'", schemes[i]);
        expect_has("collisions.js", js, buf);
    }
    expect_has(f, t, "data-key=\"t50_s\"");
    expect_has(f, t, "data-key=\"t1e9_s\"");
    /* The paths and marks are drawn by the script. */
    expect_has("collisions.js", js, "'data-scheme': s.id");
    expect_has("collisions.js", js, "['mark-50', 0.5,");
    expect_has("collisions.js", js, "['mark-1e9', 1e-9,");
    expect_has("collisions.js", js, "['points', 60]");
    expect_has("collisions.js", js, "['duration', DURATION]");
}

static void test_decoder_ids(void **state)
{
    (void)state;
    const char *f = "decoder.html";
    const char *t = text_of(f);
    expect_tag(f, t, "id=\"decode-form\"", "<form", NULL);
    expect_tag(f, t, "id=\"id-input\"", "<input", NULL);
    expect_has(f, t, "<label for=\"id-input\">Id</label>");
    expect_tag(f, t, "id=\"decode-layout\"", "<select", NULL);
    expect_tag(f, t, "<option value=\"server\"", " selected", NULL);
    expect_has(f, t, "<option value=\"twitter\">");
    expect_has(f, t, "<option value=\"custom\">");
    expect_tag(f, t, "id=\"decode-layout-text\"", "<input", NULL);
    expect_tag(f, t, "id=\"decode-epoch\"", "<input", NULL);
    expect_tag(f, t, "id=\"decode-submit\"", "<button", "type=\"submit\"", NULL);
    expect_tag(f, t, "id=\"decode-result\"", "<dl", NULL);
    /* The submit button sits inside the form (Enter submits it). */
    const char *form = strstr(t, "id=\"decode-form\"");
    const char *submit = strstr(t, "id=\"decode-submit\"");
    const char *form_end = strstr(form, "</form>");
    assert_true(form < submit && submit < form_end);
}

static void test_status_ids(void **state)
{
    (void)state;
    const char *f = "status.html";
    const char *t = text_of(f);
    expect_tag(f, t, "id=\"banner\"", "role=\"alert\"", " hidden", NULL);
    expect_tag(f, t, "id=\"rate-chart\"", "<svg", "role=\"img\"", NULL);
    static const char *const keys[] = {
        "worker_id", "layout.name", "layout.text", "lease.state", "lease.deadline",
        "lease.deadline_in_ms", "lease.renewals", "lease.failures", "clock.offset_ms",
        "clock.drift_ppm", "minted.snowflake", "minted.segment", "minted.uuid7", "minted.uuid4",
        "minted.ulid", "minted.total", "rates.last", "uptime_s",
    };
    char buf[64];
    for (size_t i = 0; i < ARRAY_LEN(keys); i++) {
        snprintf(buf, sizeof buf, "data-key=\"%s\"", keys[i]);
        expect_has(f, t, buf);
    }
    const char *js = text_of("status.js");
    expect_has("status.js", js, "get('every')");
    expect_has("status.js", js, "Math.max(200,");
    expect_has("status.js", js, "return 2000;");
}

/* console.js: the token sent, kept per tab, the busy and ready marks, and
 * values checked, not encoded. */
static void test_console_js(void **state)
{
    (void)state;
    const char *f = "console.js";
    const char *t = text_of(f);
    expect_has(f, t, "headers.Authorization = 'Bearer ' + token;");
    expect_has(f, t, "sessionStorage");
    expect_has(f, t, "document.body.dataset.busy =");
    expect_has(f, t, "document.body.dataset.ready = '1';");
    expect_has(f, t, "/^[A-Za-z0-9._~:@,-]*$/");
    expect_lacks(f, t, "encodeURIComponent");
    expect_lacks(f, t, "localStorage");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files_and_types),
        cmocka_unit_test(test_unknown_names),
        cmocka_unit_test(test_index_links_every_page),
        cmocka_unit_test(test_nothing_external),
        cmocka_unit_test(test_no_inline_code_or_style),
        cmocka_unit_test(test_every_page_frame),
        cmocka_unit_test(test_console_js_frame),
        cmocka_unit_test(test_every_control_labelled),
        cmocka_unit_test(test_planner_ids),
        cmocka_unit_test(test_estimator_ids),
        cmocka_unit_test(test_collisions_ids),
        cmocka_unit_test(test_decoder_ids),
        cmocka_unit_test(test_status_ids),
        cmocka_unit_test(test_console_js),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
