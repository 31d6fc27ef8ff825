/* SPDX-License-Identifier: MIT */
/*
 * builder.h — what the segment builder (builder.c), its verifier
 * (builder_verify.c) and export (export.c) share.
 */
#ifndef TERN_ENGINE_BUILDER_H
#define TERN_ENGINE_BUILDER_H

#include "tern.h"

#include <stddef.h>

/* A key in the escaped form of the CLI (\\ \t \n \r \xHH), cut with "..."
 * to fit out[cap] (NUL-terminated), for messages. */
void tern_escape_key(const void *key, size_t len, char *out, size_t cap);

#endif
