/* SPDX-License-Identifier: MIT */
/*
 * faultfs.h — fault injection under tern, for the fault loops
 * (tests/engine/test_faults.c).
 *
 * Two layers feed one controller:
 *   - the codec's file layer, through a tern_io_vfs table (codec/io.h):
 *     every segment file's open, pread, write, fsync, rename, unlink, mmap
 *     and ftruncate;
 *   - LMDB's own writes to catalog.mdb: faultfs.c defines pwrite, writev,
 *     write, fsync and fdatasync in the test executable (test_faults.c
 *     includes faultfs.c, so no other test gets them), which interpose
 *     on libc's for liblmdb.so (and forward with syscall(2) to the kernel;
 *     files other than catalog.mdb pass straight through).  A test that
 *     links faultfs gets the interposers; they do nothing until
 *     ff_install().
 *
 * Faults:
 *   - ff_fail_nth(kind, n, err): the n-th call of `kind` (1-based, counted
 *     from ff_install/ff_reset) fails with errno `err`, once;
 *   - ff_crash_at_sync(n, torn): the n-th sync point (a codec fsync, an
 *     fdatasync/fsync of catalog.mdb, or a write to LMDB's O_DSYNC meta
 *     descriptor) is a power cut: it fails with EIO and so does every call
 *     after it, until ff_power_loss(), called after the index is closed,
 *     makes the files what a machine would find after rebooting: every
 *     write not synced is discarded (torn: a random subset of the unsynced
 *     writes survives, the others are lost), and every creation, rename
 *     and unlink not made durable by an fsync of the directory is undone.
 */
#ifndef TERN_FAULTFS_H
#define TERN_FAULTFS_H

#include <stdint.h>

typedef enum ff_kind {
  FF_OPEN,
  FF_PREAD,
  FF_WRITE,
  FF_SYNC,
  FF_RENAME,
  FF_UNLINK,
  FF_MMAP,
  FF_FTRUNCATE,
  FF_CAT_WRITE, /* LMDB's writes to catalog.mdb */
  FF_CAT_SYNC,  /* LMDB's syncs of catalog.mdb (O_DSYNC meta writes included) */
  FF_AREAD,     /* a queued read's completion (tern_rqueue: io_uring, pool or sync) */
  FF_NKINDS
} ff_kind;

extern const char *const ff_kind_name[FF_NKINDS];

/* Installs the fault layer (codec VFS and catalog interposers) with no
 * fault armed and every counter at zero. */
void ff_install(void);
void ff_uninstall(void);
/* Disarms, zeroes the counters, forgets what power loss would undo. */
void ff_reset(void);
void ff_fail_nth(ff_kind kind, uint64_t n, int err);
void ff_crash_at_sync(uint64_t n, int torn, uint64_t seed);
/* The n-th queued read's completion (FF_AREAD, counted with it) brings
 * only half its bytes, once: a short completion. */
void ff_short_nth(uint64_t n);
/* io_uring set-up fails with errno `err` (EPERM, ENOSYS: as seccomp or a
 * kernel without it would); 0: the system's answer. */
void ff_refuse_uring(int err);
/* io_uring set-ups asked for since the program started (refused ones too). */
uint64_t ff_uring_inits(void);
/* Counts (and fails) only open, pread and mmap calls on files whose path
 * ends with `suffix` ("" or NULL: every file, the default; ff_reset keeps
 * it): a fault aimed at one file. */
void ff_only(const char *suffix);
/* Calls of `kind` so far; sync points so far (all layers). */
uint64_t ff_count(ff_kind kind);
uint64_t ff_syncs(void);
/* Strict POSIX power loss (on: 1): a creation, rename or unlink survives
 * only if its own directory was fsynced after it, and libc's creations
 * (LMDB's catalog and lock file, write.lock, mkdir, engine renames) are
 * tracked too; open(O_CREAT) and rename through libc then also count as
 * FF_OPEN and FF_RENAME calls. */
void ff_strict(int on);
/* Whether the armed fault has happened. */
int ff_fired(void);
/* After a crash, with the index closed: the files after a reboot. */
void ff_power_loss(void);

#endif
