/* SPDX-License-Identifier: MIT */
/* The linked library's version, for programs built against another. */
#include "internal.h"

const char *idm_version(void)
{
    return IDM_VERSION_STRING;
}
