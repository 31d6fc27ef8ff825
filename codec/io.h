/* SPDX-License-Identifier: MIT */
/*
 * io.h — the file layer.  Every byte the codec reads or writes goes through
 * here, and every read is counted, so that tests and benchmarks can assert
 * how many reads a lookup costs (docs/ARCHITECTURE.md, "The open mode",
 * and tests/engine/test_io.c).
 *
 * Readers (tern_rfile) serve reads either from a private read-only mapping
 * advised MADV_RANDOM, or with pread(2) into the caller's buffer; both
 * modes count one read per tern_rfile_read() (or tern_rfile_read_mapped)
 * call and the bytes it asked for.  A read pays two relaxed atomic adds,
 * on the file's own counters (the reading thread's stripe of them, each
 * stripe on its own cache line): the process-wide totals are the sum over
 * the open files plus what closed files counted, taken under a lock by
 * whoever asks for them (rarely), so counts stay exact with any number of
 * threads.  The file is advised POSIX_FADV_RANDOM so the kernel does not read
 * ahead: a cold 4 KiB read costs one 4 KiB page, not the device's readahead
 * window (8 MiB on the reference machine); a file of one page or less has
 * nothing to read ahead and is not advised.
 *
 * Writers (tern_wfile) append through a buffer to "<path>.tmp", keep an
 * XXH3-64 of every byte appended (the framing footer's checksum), and on
 * commit flush, fsync and rename the file to its final name.  The caller
 * fsyncs the directory once after renaming a set of files
 * (tern_fsync_dir).
 *
 * Page checksums.  Every 4096-byte page of a file can carry a 32-bit
 * checksum, kept in one of two places: in an array beside the file (a
 * writer collects them with tern_wfile_track_pages, a reader is given them
 * by tern_rfile_set_page_sums), or in the page's own last 4 bytes, its
 * trailer (a writer appends such pages with tern_wfile_append_page, a
 * reader is told so by tern_rfile_set_page_trailers: then the file needs
 * no array, so whoever opens it reads none).  Either way a reader checks
 * each page the first time this process reads any byte of it and
 * remembers it in a bitmap, so a warm read pays one bit test.  A mismatch
 * is TERN_ECORRUPT naming the file and the offset.
 *
 * Every system call goes through a table of functions (tern_io_vfs, as
 * SQLite's VFS), so tests can fail the Nth call or simulate power loss.
 */
#ifndef TERN_IO_H
#define TERN_IO_H

#include <stddef.h>
#include <stdint.h>

#include <sys/stat.h>
#include <sys/types.h>

/* The system calls of the file layer.  Each returns what the call it
 * stands for returns and sets errno the same way.  fsync(fd, 1) is
 * fdatasync; mmap maps len bytes of fd read-only and shared. */
typedef struct tern_io_vfs {
  int (*open)(const char *path, int flags, unsigned mode);
  int (*close)(int fd);
  int (*fstat)(int fd, struct stat *st);
  ssize_t (*pread)(int fd, void *buf, size_t len, off_t off);
  ssize_t (*write)(int fd, const void *buf, size_t len);
  int (*fsync)(int fd, int data_only);
  int (*rename)(const char *from, const char *to);
  int (*unlink)(const char *path);
  void *(*mmap)(size_t len, int fd);
  int (*munmap)(void *addr, size_t len);
  int (*ftruncate)(int fd, off_t len);
  /* The read queue's (tern_rqueue; NULL in a table: the system's).
   * uring_init sets up an io_uring of `entries` in *ring (a struct
   * io_uring): 0, or -errno (-ENOSYS when built without liburing, -EPERM
   * or -ENOSYS where seccomp or io_uring_disabled refuse it).  read_done
   * sees every queued read's result (bytes read, or -errno) as it
   * completes, whatever ran it (io_uring, a pool thread, or the caller),
   * and returns it, or what a fault makes of it. */
  int (*uring_init)(unsigned entries, void *ring);
  ssize_t (*read_done)(int fd, void *buf, size_t len, off_t off, ssize_t res);
} tern_io_vfs;

/* Installs `vfs` for every later call (NULL: the system's).  For tests:
 * not to be switched while files are open through another table. */
void tern_io_set_vfs(const tern_io_vfs *vfs);
const tern_io_vfs *tern_io_system_vfs(void);
/* unlink(2) through the table; a missing file is not an error. */
int tern_io_unlink(const char *path);

#define TERN_IO_PAGE 4096u
#define TERN_IO_TRAILER 4u /* a page's own checksum, at its end (tern_rfile_set_page_trailers) */
#define TERN_IO_PAGE_DATA (TERN_IO_PAGE - TERN_IO_TRAILER) /* the bytes a trailer covers */
/* Low 32 bits of XXH3-64 of a page (len <= 4096 bytes: the last page of a
 * file may be short; a page with a trailer: its first TERN_IO_PAGE_DATA)
 * seeded with seed + pageno. */
uint32_t tern_io_page_sum(const uint8_t *page, size_t len, uint64_t seed, uint64_t pageno);
/* Pages of a file of `size` bytes: ceil(size / 4096). */
uint64_t tern_io_npages(uint64_t size);
/* Turns the read-path page checks off (0) or on (1, the default),
 * process-wide: for benchmarks that measure what the checks cost. */
void tern_io_set_read_checks(int on);
/* Mapped files read a page they have not checked yet with pread (1, the
 * default) or fault it in through the mapping (0), process-wide: for
 * benchmarks that measure the difference. */
void tern_io_set_first_touch_pread(int on);

typedef enum tern_io_mode {
  TERN_IO_MMAP = 0, /* reads return pointers into a MADV_RANDOM mapping */
  TERN_IO_PREAD = 1 /* reads copy into the caller's buffer with pread(2) */
} tern_io_mode;

typedef struct tern_io_stats {
  uint64_t reads; /* tern_rfile_read() calls */
  uint64_t bytes; /* bytes those calls asked for */
} tern_io_stats;

typedef struct tern_rfile tern_rfile;

/* Opens `path` for reading.  Errors: -errno (message names the path);
 * TERN_ECORRUPT when it is not a regular file (a FIFO never blocks). */
int tern_rfile_open(tern_rfile **out, const char *path, tern_io_mode mode);
/* The same in pread mode, for a file read whole, once (a segment's index
 * file): no read-ahead advice, which such a read does not need. */
int tern_rfile_open_whole(tern_rfile **out, const char *path);
/* The same mapped, without advice: a file read whole, once, whose bytes
 * stay in use (a segment's index file in mmap mode).  Its one read
 * returns a pointer into the mapping, so the process neither allocates,
 * faults in, nor copies a buffer for it: the page cache's pages are
 * mapped (a fault maps many at once), and a cold file is read ahead at
 * the first fault as the kernel reads any mapping.  Its descriptor is
 * closed once it is mapped (an open segment holds none for it): such a
 * file is read through its mapping only. */
int tern_rfile_open_whole_mapped(tern_rfile **out, const char *path);
/* Maps a file opened in pread mode and reads it in mmap mode from now on,
 * as if opened so: a file is mapped only once it is known to hold bytes a
 * read may ask for.  Call before any read, with no other thread using f. */
int tern_rfile_map_now(tern_rfile *f);
/* A reader over `len` bytes at `buf` (mmap mode; the caller keeps them
 * alive and unchanged until close): for fuzzing and tests. */
int tern_rfile_open_memory(tern_rfile **out, const uint8_t *buf, size_t len, const char *name);
void tern_rfile_close(tern_rfile *f);
uint64_t tern_rfile_size(const tern_rfile *f);
const char *tern_rfile_path(const tern_rfile *f);
tern_io_mode tern_rfile_mode(const tern_rfile *f);

/* Reads `len` bytes at `off` and sets *out to them: into the mapping (mmap
 * mode; `scratch` unused) or into `scratch`, which must hold `len` bytes
 * (pread mode).  *out stays valid while the file is open (mmap) or while
 * scratch is (pread).  In mmap mode with page checksums and a scratch
 * buffer, the first read of a page not checked yet is a pread into scratch
 * (cheaper than the page fault, and the page is cached for the mapping
 * afterwards): *out is then scratch, so callers in mmap mode that pass
 * scratch keep it as long as *out.  A range past the end of the file is
 * TERN_ECORRUPT (the file was truncated); a short pread is too.  Counts
 * one read. */
int tern_rfile_read(tern_rfile *f, uint64_t off, size_t len, void *scratch, const uint8_t **out);
/* The same read when it needs no scratch buffer — a mapped file whose
 * pages in the range are all checked (or carry no checksums): *out points
 * into the mapping, one read counted, TERN_OK.  Else 1, nothing read or
 * counted: the caller then calls tern_rfile_read with a buffer.  For
 * callers that would allocate the buffer only for a first touch. */
int tern_rfile_read_mapped(tern_rfile *f, uint64_t off, size_t len, const uint8_t **out);

/* From now on every read checks the pages it touches that this process has
 * not checked yet against `sums`: tern_io_npages(size) u32 LE checksums
 * (tern_io_page_sum with `seed`), which the caller keeps alive until close. */
int tern_rfile_set_page_sums(tern_rfile *f, const uint8_t *sums, uint64_t seed);
/* The same, each whole page being checked against its own trailer: its
 * last 4 bytes, u32 LE, tern_io_page_sum of its first TERN_IO_PAGE_DATA
 * bytes with `seed` (tern_wfile_append_page).  A short last page has no
 * trailer and is not checked (the frame footer's checksum covers it:
 * tern_frame_verify_file); callers read none of it but through verify. */
int tern_rfile_set_page_trailers(tern_rfile *f, uint64_t seed);
/* The mapping (mmap mode; NULL in pread mode or for an empty file): for
 * prefetch hints only, every read still goes through tern_rfile_read. */
const uint8_t *tern_rfile_map(const tern_rfile *f);
/* 1 when the page holding `off` has been checked by this process. */
int tern_rfile_page_checked(const tern_rfile *f, uint64_t off);
/* The bitmap behind tern_rfile_page_checked (bit p: page p checked; read
 * it with an acquire load) and its page count, for a caller keeping it
 * beside other hot state (the engine's range map); NULL when the file has
 * no page checksums.  Valid while f is open. */
const _Atomic uint64_t *tern_rfile_checked_bits(const tern_rfile *f, uint64_t *npages);
/* A word that is 0 while no page of f has been checked by this process
 * (none since its pages were last forgotten), nonzero after: a reader
 * seeing 0 knows every bit of the bitmap is clear but for a check racing
 * with it.  Valid while f is open. */
const _Atomic uint64_t *tern_rfile_checked_any(const tern_rfile *f);
/* The page holding `off`, when this process has not checked it yet and it
 * is in the page cache (mincore(2) of the mapping: no I/O), checked now.
 * 1: checked (now or before), 0: not checked and not cached (mmap mode with
 * page checksums only, else 0), TERN_ECORRUPT: damaged.  Counts no read. */
int tern_rfile_check_cached(tern_rfile *f, uint64_t off);
/* Asks the kernel to read the page holding `off` in the background
 * (MADV_WILLNEED; mmap mode only, a hint). */
void tern_rfile_will_need(const tern_rfile *f, uint64_t off);
/* Asks the kernel to read [off, off + len) in the background
 * (POSIX_FADV_WILLNEED; either mode, a hint: nothing counted or checked;
 * the reads that use the bytes are counted and checked as usual). */
void tern_rfile_prefetch(const tern_rfile *f, uint64_t off, uint64_t len);
/* Checks every page against its sum or trailer, whether checked before or
 * not (verify). */
int tern_rfile_check_pages(tern_rfile *f);

/* This file's counters, and the process-wide totals of all files (closed
 * ones included).  Resetting a file's counters leaves the totals alone. */
void tern_rfile_stats(const tern_rfile *f, tern_io_stats *out);
void tern_rfile_reset_stats(tern_rfile *f);
void tern_io_global_stats(tern_io_stats *out);
/* Process-wide since load (not reset): pages whose checksum was verified,
 * and reads that touched a page not yet checked (the other reads found
 * every page already checked: the cache's hits). */
void tern_io_check_counts(uint64_t *checked, uint64_t *first_touch);
void tern_io_reset_global_stats(void);

/* Drops the file's pages from the page cache (posix_fadvise DONTNEED), for
 * cold-cache tests and benchmarks.  Pages mapped by this process are
 * unmapped from its view first so the kernel can drop them. */
int tern_rfile_evict(tern_rfile *f);
/* The same for a path that is not open here: fdatasync, then DONTNEED. */
int tern_io_evict_path(const char *path);
/* Asks the kernel to start reading the whole file at `path` (a hint: no
 * error, no read counted; the reads that use it are counted as usual).
 * Returns the file's size, 0 when it could not be asked for. */
uint64_t tern_io_prefetch_path(const char *path);

/* ------------------------------------------------------- the read queue
 *
 * Reads in flight together, so that a cold batch uses the device's
 * parallelism (a disk serving several reads at once) instead of waiting
 * for each read before asking the next (io_queue.c).  Backends, the first
 * that works: io_uring (liburing), a bounded pool of threads calling
 * pread, plain pread in the caller at submit time.  Each read is of
 * whole pages (offset a multiple of TERN_IO_PAGE, length whole pages or up
 * to the end of the file), counted as one read of its length when
 * submitted (as tern_rfile_read counts), and on completion every page of
 * it this process has not checked yet is checked against its checksum
 * and remembered (tern_rfile_page_checked), exactly as tern_rfile_read
 * does.  One thread uses a queue at a time. */
typedef enum tern_rq_kind {
  TERN_RQ_AUTO = 0,    /* io_uring, else threads, else sync */
  TERN_RQ_URING = 1,   /* io_uring only (else threads, else sync) */
  TERN_RQ_THREADS = 2, /* a pool of pread threads (else sync) */
  TERN_RQ_SYNC = 3     /* pread in tern_rqueue_submit */
} tern_rq_kind;
/* Process-wide: the backend new queues start from (TERN_RQ_AUTO): for tests
 * that force each fallback. */
void tern_io_set_queue_kind(tern_rq_kind kind);

typedef struct tern_rqueue tern_rqueue;
/* A queue of up to `depth` (1 to 1024) reads in flight.  Errors: TERN_EINVAL,
 * TERN_ENOMEM.  A backend refused (io_uring: ENOSYS, EPERM; threads:
 * EAGAIN) is no error: the next one is used. */
int tern_rqueue_open(tern_rqueue **out, unsigned depth);
/* Waits for the reads still in flight (their results dropped), frees q. */
void tern_rqueue_close(tern_rqueue *q);
/* Whether q, idle, may serve a reader wanting `depth` as a queue opened now
 * would: nothing in flight, depth enough, and the backend asked for and
 * the table of system calls unchanged since it was opened.  For keeping
 * a queue between uses (setting one up is a few system calls). */
int tern_rqueue_reusable(const tern_rqueue *q, unsigned depth);
/* The backend in use (TERN_RQ_URING, _THREADS or _SYNC). */
tern_rq_kind tern_rqueue_kind(const tern_rqueue *q);
unsigned tern_rqueue_depth(const tern_rqueue *q);
unsigned tern_rqueue_inflight(const tern_rqueue *q);
/* Queues a read of `len` bytes at `off` of f into `buf`, which stays
 * untouched by the caller until the read's completion is taken; `tag` is
 * returned with it.  Whole pages only (above), else TERN_EINVAL; a range
 * past the end is TERN_ECORRUPT; a full queue is TERN_EBUSY (take a
 * completion first). */
int tern_rqueue_submit(tern_rqueue *q, tern_rfile *f, uint64_t off, size_t len, void *buf,
                       uint64_t tag);
/* Sends the reads queued so far to the device now, not at the next wait
 * (io_uring: one system call; the other backends start each read at
 * submit).  For a caller with work to do before it waits.  Best effort: a
 * refused submission is retried by the next wait, which reports it. */
void tern_rqueue_flush(tern_rqueue *q);
/* Takes one completed read, waiting for one if none is done: its tag in
 * *tag, and its status: TERN_OK (all its bytes in its buffer and its
 * pages checked), -errno (the file named), TERN_ECORRUPT (a page failed
 * its checksum, or the file shrank).  A short completion is finished
 * with pread.  TERN_NOTFOUND when nothing is in flight. */
int tern_rqueue_wait(tern_rqueue *q, uint64_t *tag);

/* Reads every page of f this process has not checked yet, in order, in
 * sequential reads of up to TERN_RQ_LOAD_MAX bytes through a read queue of
 * `depth` (1 to 1024), each checked and counted as tern_rqueue_wait does:
 * afterwards every page is checked and in the page cache, so reads of f
 * cost no I/O.  For a batch that needs most of a file: reading it whole in
 * order costs less than its blocks one by one.  Memory: depth reads'
 * buffers.  Errors: those of tern_rqueue_open, _submit and _wait (the
 * file named). */
#define TERN_RQ_LOAD_MAX (512u * 1024u)
int tern_rfile_load(tern_rfile *f, unsigned depth);

typedef struct tern_wfile tern_wfile;

/* Creates "<path>.tmp" (truncating a leftover one) for appending. */
int tern_wfile_create(tern_wfile **out, const char *path);
/* Keeps the page checksums of every byte appended from now on (before the
 * first append only). */
int tern_wfile_track_pages(tern_wfile *w, uint64_t seed);
/* The checksums of the pages appended so far, the last one possibly short:
 * call after the last append; valid until commit or abort. */
int tern_wfile_page_sums(tern_wfile *w, const uint8_t **sums, size_t *len);
int tern_wfile_append(tern_wfile *w, const void *buf, size_t len);
/* Appends one whole page at a page boundary (else TERN_EINVAL), first
 * storing in its last TERN_IO_TRAILER bytes the checksum of the rest
 * (tern_io_page_sum with `seed` and the page's number): the page carries
 * its own check (tern_rfile_set_page_trailers). */
int tern_wfile_append_page(tern_wfile *w, uint8_t page[TERN_IO_PAGE], uint64_t seed);
uint64_t tern_wfile_offset(const tern_wfile *w);
/* XXH3-64 of every byte appended so far. */
uint64_t tern_wfile_digest(const tern_wfile *w);
/* Flushes, fsyncs, closes and renames to the final path; frees w. */
int tern_wfile_commit(tern_wfile *w);
/* Closes, removes the temporary file and frees w.  NULL is fine. */
void tern_wfile_abort(tern_wfile *w);

/* fsync of a directory, making renames and creations in it durable. */
int tern_fsync_dir(const char *dir);

#endif
