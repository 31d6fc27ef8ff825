/*
 * io.h — the file layer.  Every byte the codec reads or writes goes through
 * here, and every read is counted, so that tests and benchmarks can assert
 * how many reads a lookup costs (docs/ARCHITECTURE.md, "Why mmap, measured",
 * and tests/engine/test_io.c).
 *
 * Readers (tern_rfile) serve reads either from a private read-only mapping
 * advised MADV_RANDOM, or with pread(2) into the caller's buffer; both
 * modes count one read per tern_rfile_read() call and the bytes it asked
 * for.  The file is advised POSIX_FADV_RANDOM so the kernel does not read
 * ahead: a cold 4 KiB read costs one 4 KiB page, not the device's readahead
 * window (8 MiB on the reference machine).
 *
 * Writers (tern_wfile) append through a buffer to "<path>.tmp", keep an
 * XXH3-64 of every byte appended (the framing footer's checksum), and on
 * commit flush, fsync and rename the file to its final name.  The caller
 * fsyncs the directory once after renaming a set of files
 * (tern_fsync_dir).
 */
#ifndef TERN_IO_H
#define TERN_IO_H

#include <stddef.h>
#include <stdint.h>

typedef enum tern_io_mode {
  TERN_IO_MMAP = 0, /* reads return pointers into a MADV_RANDOM mapping */
  TERN_IO_PREAD = 1 /* reads copy into the caller's buffer with pread(2) */
} tern_io_mode;

typedef struct tern_io_stats {
  uint64_t reads; /* tern_rfile_read() calls */
  uint64_t bytes; /* bytes those calls asked for */
} tern_io_stats;

typedef struct tern_rfile tern_rfile;

/* Opens `path` for reading.  Errors: -errno (message names the path). */
int tern_rfile_open(tern_rfile **out, const char *path, tern_io_mode mode);
void tern_rfile_close(tern_rfile *f);
uint64_t tern_rfile_size(const tern_rfile *f);
const char *tern_rfile_path(const tern_rfile *f);
tern_io_mode tern_rfile_mode(const tern_rfile *f);

/* Reads `len` bytes at `off` and sets *out to them: into the mapping (mmap
 * mode; `scratch` unused) or into `scratch`, which must hold `len` bytes
 * (pread mode).  *out stays valid while the file is open (mmap) or while
 * scratch is (pread).  A range past the end of the file is TERN_ECORRUPT
 * (the file was truncated); a short pread is too.  Counts one read. */
int tern_rfile_read(tern_rfile *f, uint64_t off, size_t len, void *scratch, const uint8_t **out);

/* This file's counters, and the process-wide totals of all files. */
void tern_rfile_stats(const tern_rfile *f, tern_io_stats *out);
void tern_rfile_reset_stats(tern_rfile *f);
void tern_io_global_stats(tern_io_stats *out);
void tern_io_reset_global_stats(void);

/* Drops the file's pages from the page cache (posix_fadvise DONTNEED), for
 * cold-cache tests and benchmarks.  Pages mapped by this process are
 * unmapped from its view first so the kernel can drop them. */
int tern_rfile_evict(tern_rfile *f);
/* The same for a path that is not open here: fdatasync, then DONTNEED. */
int tern_io_evict_path(const char *path);

typedef struct tern_wfile tern_wfile;

/* Creates "<path>.tmp" (truncating a leftover one) for appending. */
int tern_wfile_create(tern_wfile **out, const char *path);
int tern_wfile_append(tern_wfile *w, const void *buf, size_t len);
/* Appends zero bytes until the offset is a multiple of `align`. */
int tern_wfile_pad(tern_wfile *w, uint64_t align);
uint64_t tern_wfile_offset(const tern_wfile *w);
/* XXH3-64 of every byte appended so far. */
uint64_t tern_wfile_digest(const tern_wfile *w);
/* Flushes, fsyncs, closes and renames to the final path; frees w. */
int tern_wfile_commit(tern_wfile *w);
/* Closes, removes the temporary file and frees w.  NULL is fine. */
void tern_wfile_abort(tern_wfile *w);

/* fsync of a directory, making renames and creations in it durable. */
int tern_fsync_dir(const char *dir);
/* Writes `len` bytes to `path` atomically: temp file, fsync, rename, and
 * fsync of the directory. */
int tern_write_file_atomic(const char *path, const void *buf, size_t len);

#endif
