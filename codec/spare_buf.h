/* SPDX-License-Identifier: MIT */
/*
 * spare_buf.h — buffers made ready ahead of the read that fills them.
 *
 * A fresh process's first read of a segment's index file copies it into
 * memory the process has never touched: one page fault per 4 KiB of the
 * buffer, ~2.5 µs each on the machine measured, more than the copy
 * (docs/benchmarks/HISTORY.md, "2026-12-02, evening").  tern_open asks
 * for every index file before it waits for the catalog's cold read; it
 * readies each one's buffer then, so the faults are taken while the
 * device works, and the segment's open (segment_open.c) reads into it.  Keyed by path and exact length: a
 * file that changed size meanwhile gets a fresh buffer.  Process-wide,
 * bounded (SPARE_MAX_BYTES), thread-safe; a buffer nobody takes is freed
 * when a newer one needs the room.
 */
#ifndef TERN_CODEC_SPARE_BUF_H
#define TERN_CODEC_SPARE_BUF_H

#include <stddef.h>

/* Readies a buffer of `len` bytes for `key`, its pages touched now (a
 * hint: nothing happens without memory or room, or when len is 0). */
void tern_spare_ready(const char *key, size_t len);
/* The buffer readied for `key` with exactly `len` bytes, now the caller's
 * (free() it); NULL when there is none. */
void *tern_spare_take(const char *key, size_t len);
/* Frees every buffer not taken (tests). */
void tern_spare_clear(void);

#endif
