/* SPDX-License-Identifier: MIT */
/*
 * create.h — creating an index directory durably and all or nothing
 * (create.c): a directory holds an index exactly when it holds catalog.mdb.
 */
#ifndef TERN_ENGINE_CREATE_H
#define TERN_ENGINE_CREATE_H

#include "engine/state/index.h"

/* What a creation cut short leaves: not an index; the next creation
 * removes it. */
#define TERN_CATALOG_NEW_FILE TERN_CATALOG_FILE ".new"

/* mkdir(dir), then fsyncs its parent; an existing dir is fine. */
int tern_index_mkdir(const char *dir);
/* Builds catalog.mdb aside and renames it into place (DIR fsynced), unless
 * another process completed one meanwhile.  Errors: -errno, TERN_EBUSY
 * (another process held DIR for 10 s), TERN_EFULL, TERN_ENOMEM. */
int tern_index_create(tern_index *idx, const tern_options *o);
/* The creating transaction on idx->env: tables, format, options, state and
 * last the creation record (one LMDB commit). */
int tern_index_create_catalog(tern_index *idx, const tern_options *o);

#endif
