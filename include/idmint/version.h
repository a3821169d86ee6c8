/* SPDX-License-Identifier: MIT */
/*
 * The one source of idmint's version. CMake reads these three macros; the
 * shared library's SOVERSION is IDM_VERSION_MAJOR.
 */
#ifndef IDMINT_VERSION_H
#define IDMINT_VERSION_H

#include "export.h"

#define IDM_VERSION_MAJOR 0
#define IDM_VERSION_MINOR 1
#define IDM_VERSION_PATCH 0

#define IDM__STR2(x) #x
#define IDM__STR(x) IDM__STR2(x)
#define IDM_VERSION_STRING                                                    \
    IDM__STR(IDM_VERSION_MAJOR) "." IDM__STR(IDM_VERSION_MINOR) "."          \
        IDM__STR(IDM_VERSION_PATCH)

/* The version of the library actually linked, as "MAJOR.MINOR.PATCH". */
IDM_EXTERN const char *idm_version(void);

#endif /* IDMINT_VERSION_H */
