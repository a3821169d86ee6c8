/* SPDX-License-Identifier: MIT */
/*
 * The web console's static files (src/server/ui/), embedded in idmintd at
 * build time by a generated C file, so the console needs nothing but the
 * binary: no file on disk, no CDN, no external font.
 */
#ifndef IDMD_UI_H
#define IDMD_UI_H

#include <stdbool.h>
#include <stddef.h>

/* The embedded file name ("planner.html": a bare name, no '/'): its bytes,
 * length and media type ("text/html; charset=utf-8"); false if there is
 * none. */
bool idmd_ui_file(const char *name, const unsigned char **data, size_t *len, const char **type);

#endif /* IDMD_UI_H */
