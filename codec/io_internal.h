/* SPDX-License-Identifier: MIT */
/*
 * io_internal.h — what the read queue (io_queue.c) needs of a reader
 * (io.c).  Not for use outside codec/io*.c.
 */
#ifndef TERN_IO_INTERNAL_H
#define TERN_IO_INTERNAL_H

#include "codec/io.h"

/* The table in use, its read-queue calls defaulted to the system's. */
const tern_io_vfs *tern_io_vfs_now(void);
int tern_io_uring_init(unsigned entries, void *ring); /* the system's */
int tern_rfile_fd(const tern_rfile *f);
/* The mapping of a reader over memory (tern_rfile_open_memory), else NULL. */
const uint8_t *tern_rfile_borrowed(const tern_rfile *f);
/* Counts one read of len bytes. */
void tern_rfile_count(tern_rfile *f, size_t len);
/* A queued read of whole pages [off, off + len) into buf whose first `got`
 * bytes arrived (got < 0: -errno): the rest read with pread, then every
 * page not checked yet checked.  TERN_OK or the error, the file named. */
int tern_rfile_finish(tern_rfile *f, uint64_t off, size_t len, uint8_t *buf, ssize_t got);

#endif
