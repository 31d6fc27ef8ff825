/* SPDX-License-Identifier: MIT */
/*
 * backup.c — tern_backup: a consistent, verified copy of one snapshot.
 *
 * The snapshot pins its state, so none of its segment files is unlinked
 * while it is held (index.h), whatever merges commit meanwhile.  The copy
 * is built in DEST.tmp: a fresh catalog holding exactly that commit,
 * written through the engine's own record functions (so its records are
 * what a commit would write), then the segment files, hard-linked (they
 * are immutable) or copied where linking fails.  The copy is opened and
 * verified, fsynced, and renamed to DEST, whose parent is fsynced: DEST
 * either does not exist or is a whole, sound index.  As RocksDB's
 * Checkpoint and Lucene's SnapshotDeletionPolicy (docs/ARCHITECTURE.md).
 */
#include "engine/state/edit.h"
#include "engine/util/errwrap.h"
#include "engine/util/path.h"
#include "engine/state/index.h"

#include "codec/status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The parent directory of path (a malloc'd copy), "." for a bare name. */
static char *parent_of(const char *path) {
  char *copy = strdup(path);
  if (!copy) return NULL;
  char *d = strdup(dirname(copy));
  free(copy);
  return d;
}

/* Whether dir `inner` (resolved) is `outer` (resolved) or lies under it. */
static int path_within(const char *inner, const char *outer) {
  size_t n = strlen(outer);
  if (strncmp(inner, outer, n) != 0) return 0;
  return inner[n] == '\0' || inner[n] == '/' || (n == 1 && outer[0] == '/');
}

/* dest's parent exists, is a directory, and is not inside the index. */
static int check_dest_parent(const char *dest, const char *index_dir) {
  char *parent = parent_of(dest);
  if (!parent) return tern_fail(TERN_ENOMEM, "backup: out of memory");
  char *rp = realpath(parent, NULL), *ri = rp ? realpath(index_dir, NULL) : NULL;
  int rc = TERN_OK;
  if (!rp) {
    int e = errno ? errno : ENOENT;
    rc = tern_fail(-e, "%s: its parent directory %s: %s", dest, parent, strerror(e));
  } else if (!ri) {
    rc = tern_fail_errno(index_dir);
  } else if (path_within(rp, ri)) {
    rc = tern_fail(TERN_EINVAL, "%s: inside the index directory %s (a backup goes elsewhere)",
                   dest, index_dir);
  }
  free(ri);
  free(rp);
  free(parent);
  return rc;
}

/* TERN_OK when dest is absent or an empty directory (*exists says which). */
static int check_dest(const char *dest, const char *index_dir, int *exists) {
  TERN_TRY(check_dest_parent(dest, index_dir));
  return tern_dir_absent_or_empty(dest, " (a backup goes into a new or empty directory)", exists);
}

/* Empties and removes a leftover DIR.tmp of an interrupted backup (flat). */
static int remove_tmp(const char *tmp) {
  DIR *d = opendir(tmp);
  if (!d) return errno == ENOENT ? TERN_OK : tern_fail_errno(tmp);
  struct dirent *e;
  int rc = TERN_OK;
  while (rc == TERN_OK && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char *p = tern_path_join(tmp, e->d_name);
    if (!p) rc = tern_fail(TERN_ENOMEM, "backup: out of memory");
    else if (unlink(p) < 0) rc = tern_fail_errno(p);
    free(p);
  }
  closedir(d);
  if (rc == TERN_OK && rmdir(tmp) < 0) rc = tern_fail_errno(tmp);
  return rc;
}

static int fsync_path(const char *path, int flags) {
  int fd = open(path, flags | O_CLOEXEC);
  if (fd < 0) return tern_fail_errno(path);
  int rc = fsync(fd) < 0 ? tern_fail_errno(path) : TERN_OK;
  close(fd);
  return rc;
}

/* ------------------------------------------------------------ catalog */

/* The snapshot's catalog as one edit of the new index (log only: that
 * index is closed right after, never served). */
static int copy_edit(tern_index *dst, const tern_snapshot *snap, tern_edit *e) {
  const tern_state *st = snap->st;
  for (size_t i = 0; i < st->nslots; i++) {
    const tern_slot *sl = &st->slots[i];
    tern_rec_segment r;
    memcpy(r.segid, sl->segid, TERN_SEGID_SIZE);
    r.max_doc = sl->ref->max_doc;
    TERN_TRY(tern_edit_add_segment(dst, e, sl->ref->number, &r, NULL,
                                   sl->live ? sl->live->ld : NULL));
    e->adds[e->nadds - 1].rec.deleted = sl->deleted;
    e->adds[e->nadds - 1].rec.livedocs_gen = sl->gen;
  }
  e->buf = TERN_EDIT_BUF_COPY;
  e->view = snap->buf;
  e->copy_counters = 1;
  e->copy_seq = st->rec.seq;
  e->copy_next_segment = st->rec.next_segment;
  return TERN_OK;
}

static int write_catalog(const tern_snapshot *snap, const char *tmp) {
  tern_index *dst;
  TERN_TRY(tern_open(&dst, tmp, TERN_CREATE, &snap->idx->opts));
  tern_edit e;
  tern_edit_init(&e, NULL);
  e.borrowed_ld = 1; /* the snapshot's */
  tern_install_lock(dst);
  int rc = copy_edit(dst, snap, &e);
  if (rc == TERN_OK) rc = tern_edit_log(dst, &e);
  tern_install_unlock(dst);
  tern_edit_free(dst, &e);
  tern_errsave es;
  tern_err_save(&es);
  int crc = tern_close(dst); /* clears the message */
  return rc != TERN_OK ? tern_err_restore(&es, rc) : crc;
}

/* ------------------------------------------------------------ segment files */

/* Links (else copies) one file; *linked counts the links. */
static int link_or_copy(const char *from, const char *to, size_t *linked) {
  if (link(from, to) == 0) {
    (*linked)++;
    return TERN_OK;
  }
  if (errno != EXDEV && errno != EPERM && errno != ENOTSUP && errno != EMLINK)
    return tern_fail_errno(to);
  return tern_file_copy(from, to);
}

static int slot_named(const tern_state *st, const char *name) {
  for (size_t i = 0; i < st->nslots; i++)
    if (!strcmp(st->slots[i].ref->name, name)) return 1;
  return 0;
}

/* Every file of the snapshot's segments (not their temporaries). */
static int copy_segments(const tern_snapshot *snap, const char *tmp) {
  const char *src = snap->idx->dir;
  DIR *d = opendir(src);
  if (!d) return tern_fail_errno(src);
  struct dirent *e;
  size_t linked = 0;
  int rc = TERN_OK;
  while (rc == TERN_OK && (e = readdir(d)) != NULL) {
    char name[256];
    size_t nl = strlen(e->d_name);
    if (!tern_seg_file_segment(e->d_name, name, sizeof name) || !slot_named(snap->st, name) ||
        (nl > 4 && !strcmp(e->d_name + nl - 4, ".tmp")))
      continue;
    char *from = tern_path_join(src, e->d_name), *to = tern_path_join(tmp, e->d_name);
    rc = from && to ? link_or_copy(from, to, &linked) : tern_fail(TERN_ENOMEM, "out of memory");
    free(from);
    free(to);
  }
  closedir(d);
  return rc;
}

/* ------------------------------------------------------------ the copy */

/* Opens the copy, verifies it, and checks it holds the snapshot's commit. */
static int verify_copy(const tern_snapshot *snap, const char *tmp) {
  tern_index *b;
  TERN_TRY(tern_open(&b, tmp, TERN_RDONLY, NULL));
  int rc = tern_verify(b);
  tern_snapshot *s = NULL;
  if (rc == TERN_OK) rc = tern_snapshot_open(&s, b);
  if (rc == TERN_OK) {
    uint64_t want, got;
    tern_snapshot_count((tern_snapshot *)snap, &want);
    tern_snapshot_count(s, &got);
    if (got != want || s->st->nslots != snap->st->nslots || s->st->rec.seq != snap->st->rec.seq)
      rc = tern_fail(TERN_ECORRUPT, "%s: the copy holds %" PRIu64 " documents, not %" PRIu64,
                     tmp, got, want);
  }
  tern_errsave e;
  tern_err_save(&e);
  tern_snapshot_close(s); /* these clear the message */
  int crc = tern_close(b);
  return rc != TERN_OK ? tern_err_restore(&e, rc) : crc;
}

static int fsync_parent(const char *path) {
  char *copy = strdup(path);
  if (!copy) return tern_fail(TERN_ENOMEM, "out of memory");
  int rc = fsync_path(dirname(copy), O_RDONLY | O_DIRECTORY);
  free(copy);
  return rc;
}

/* Damage the copy's verification found is the source's: the segment files
 * are its own, linked or copied.  The message names the source's file. */
static int name_source_file(const char *dir, const char *tmp) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s", tern_errmsg());
  size_t n = strlen(tmp);
  if (strncmp(msg, tmp, n) != 0 || msg[n] != '/')
    return tern_fail_wrap(TERN_ECORRUPT, "the copy failed verification");
  return tern_fail(TERN_ECORRUPT, "%s%s (found verifying the copy)", dir, msg + n);
}

int tern_backup(tern_snapshot *snap, const char *dest) {
  tern_clear_error();
  if (!snap || !dest || !*dest) return tern_fail(TERN_EINVAL, "tern_backup: bad arguments");
  int exists;
  TERN_TRY(check_dest(dest, snap->idx->dir, &exists));
  size_t n = strlen(dest);
  char *tmp = malloc(n + 5);
  if (!tmp) return tern_fail(TERN_ENOMEM, "out of memory");
  snprintf(tmp, n + 5, "%s.tmp", dest);
  int rc = remove_tmp(tmp);
  if (rc == TERN_OK && mkdir(tmp, 0777) < 0) rc = tern_fail_errno(tmp);
  if (rc == TERN_OK) rc = write_catalog(snap, tmp);
  if (rc == TERN_OK) rc = copy_segments(snap, tmp);
  if (rc == TERN_OK) rc = verify_copy(snap, tmp);
  if (rc == TERN_ECORRUPT) rc = name_source_file(snap->idx->dir, tmp);
  if (rc == TERN_OK) rc = fsync_path(tmp, O_RDONLY | O_DIRECTORY);
  if (rc == TERN_OK && rename(tmp, dest) < 0) rc = tern_fail_errno(dest);
  if (rc == TERN_OK) rc = fsync_parent(dest);
  if (rc != TERN_OK) {
    tern_errsave e;
    tern_err_save(&e);
    remove_tmp(tmp);
    rc = tern_err_restore(&e, rc);
  }
  free(tmp);
  return rc;
}
