/* SPDX-License-Identifier: MIT */
/*
 * catalog_check.h — checking catalog.mdb before and while LMDB opens it.
 *
 * LMDB 0.9 trusts its file: a truncated file makes it touch pages past
 * the end (SIGBUS), a zeroed or garbled page trips an assertion (abort),
 * another program's environment is adopted.  So, before mdb_env_open,
 * tern_catalog_precheck looks at the file with plain reads: a regular
 * file (not a FIFO or a directory: no open can hang), both meta pages
 * (magic, version, page size) and a size that holds every page the newest
 * meta claims.  Then, inside the read transaction that pins that meta's
 * pages, tern_catalog_walk reads every page reachable from it (free list,
 * main database, each named database): page numbers in range, each page
 * reached once, headers, node bounds, key order, overflow runs and the
 * per-database page and entry counts LMDB keeps.  Both read through a
 * descriptor the caller may already hold (tern_open: the one it asked
 * for the catalog's pages with, then LMDB's own), so that a fresh open
 * does not open the file three times.  Cost: the pre-check two system
 * calls (one read of both meta pages' heads, one fstat) when the page
 * size is 4 KiB; the walk as many and a pread per page of the catalog
 * (docs/ARCHITECTURE.md gives measured figures).
 */
#ifndef TERN_ENGINE_CATALOG_CHECK_H
#define TERN_ENGINE_CATALOG_CHECK_H

#include <stdint.h>

/* Named databases of a tern catalog, as bits of tern_catalog_walk_info.tables. */
#define TERN_TABLE_META 0x1u
#define TERN_TABLE_SEGMENTS 0x2u
#define TERN_TABLE_LIVEDOCS 0x4u
#define TERN_TABLE_BUFFER 0x8u
#define TERN_TABLES_ALL 0xfu

typedef struct tern_catalog_walk_info {
  unsigned tables;   /* tern's named databases present */
  int foreign;       /* the main database holds something tern never writes */
  uint64_t pages;    /* pages read */
  uint64_t entries;  /* records of the named databases */
} tern_catalog_walk_info;

/* 0 and *empty = 1 for a 0-byte file (never initialised), 0 when the file
 * passes, TERN_ECORRUPT naming `path` otherwise (-errno on I/O failure). */
int tern_catalog_precheck(const char *path, int *empty);
/* The same on `fd`, the file open read-only (O_NONBLOCK: a FIFO in its
 * place does not hang) and named `path`; fd stays open. */
int tern_catalog_precheck_fd(int fd, const char *path, int *empty);
/* Walks the tree of the meta page whose transaction id is `txnid`.
 * TERN_ECORRUPT naming path and page on damage; TERN_EBUSY when no meta
 * has that id (a writer moved on: begin again). */
int tern_catalog_walk(const char *path, uint64_t txnid, tern_catalog_walk_info *info);
/* The same on `fd`, the very file LMDB maps (mdb_env_get_fd), named `path`;
 * fd stays open and its offset is not used. */
int tern_catalog_walk_fd(int fd, const char *path, uint64_t txnid, tern_catalog_walk_info *info);

#endif
