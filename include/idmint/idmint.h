/* SPDX-License-Identifier: MIT */
/* idmint: the whole public API in one include. */
#ifndef IDMINT_IDMINT_H
#define IDMINT_IDMINT_H

#include "version.h"
#include "error.h"
#include "clock.h"
#include "text.h"
#include "layout.h"
#include "snowflake.h"
#include "rng.h"
#include "uuid.h"
#include "ulid.h"
#include "objectid.h"
#include "opaque.h"

#endif /* IDMINT_IDMINT_H */
