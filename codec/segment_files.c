/* SPDX-License-Identifier: MIT */
/*
 * segment_files.c — the names of a segment's files: NAME.tim, .tix, .doc,
 * .flt and .val, and "<file>.tmp" while a writer has not committed them.
 */
#include "codec/segment_internal.h"
#include "codec/spare_buf.h"

#include "codec/coding.h"
#include "codec/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const tern_seg_ext[TERN_SEG_NFILES] = {".tim", ".tix", ".doc", ".flt", ".val"};
const uint32_t tern_seg_kind[TERN_SEG_NFILES] = {TERN_KIND_TERMS, TERN_KIND_INDEX,
                                                 TERN_KIND_POSTINGS, TERN_KIND_FILTER,
                                                 TERN_KIND_VALUES};

char *tern_seg_path(const char *dir, const char *name, int file, int tmp) {
  size_t n = strlen(dir) + strlen(name) + 16;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s%s%s", dir, name, tern_seg_ext[file], tmp ? ".tmp" : "");
  return p;
}

uint64_t tern_seg_page_seed(const uint8_t *segid, int file) {
  return tern_load64(segid) ^ tern_load64(segid + 8) ^ tern_seg_kind[file];
}

uint64_t tern_seg_next_uid(void) {
  static _Atomic uint64_t next = 1;
  return atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);
}

int tern_seg_remove(const char *dir, const char *name) {
  int rc = TERN_OK;
  for (int f = 0; f < TERN_SEG_NFILES; f++) {
    for (int tmp = 0; tmp < 2; tmp++) {
      char *p = tern_seg_path(dir, name, f, tmp);
      if (!p) return tern_fail(TERN_ENOMEM, "out of memory");
      int e = tern_io_unlink(p);
      if (e != TERN_OK && rc == TERN_OK) rc = e;
      free(p);
    }
  }
  return rc;
}

uint64_t tern_seg_prefetch(const char *dir, const char *name) {
  char *p = tern_seg_path(dir, name, SEG_TIX, 0);
  uint64_t size = p ? tern_io_prefetch_path(p) : 0;
  free(p);
  return size;
}

void tern_seg_ready_index_buffer(const char *dir, const char *name, uint64_t tix_size) {
  char *p = tix_size <= SIZE_MAX ? tern_seg_path(dir, name, SEG_TIX, 0) : NULL;
  if (p) tern_spare_ready(p, (size_t)tix_size);
  free(p);
}

int tern_seg_file_segment(const char *filename, char *name, size_t cap) {
  size_t len = strlen(filename);
  if (len > 4 && !strcmp(filename + len - 4, ".tmp")) len -= 4;
  for (int f = 0; f < TERN_SEG_NFILES; f++) {
    size_t el = strlen(tern_seg_ext[f]);
    if (len <= el || memcmp(filename + len - el, tern_seg_ext[f], el) != 0) continue;
    size_t n = len - el;
    if (n + 1 > cap) return 0;
    memcpy(name, filename, n);
    name[n] = '\0';
    return 1;
  }
  return 0;
}

int tern_file_copy(const char *from, const char *to) {
  int in = open(from, O_RDONLY | O_CLOEXEC);
  if (in < 0) return tern_fail_errno(from);
  int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (out < 0) {
    close(in);
    return tern_fail_errno(to);
  }
  enum { BUF = 1 << 20 };
  char *buf = malloc(BUF);
  int rc = buf ? TERN_OK : tern_fail(TERN_ENOMEM, "copying %s: out of memory", from);
  while (rc == TERN_OK) {
    ssize_t n = read(in, buf, BUF);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) rc = tern_fail_errno(from);
    if (n <= 0) break;
    for (ssize_t done = 0; rc == TERN_OK && done < n;) {
      ssize_t w = write(out, buf + done, (size_t)(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) rc = tern_fail_errno(to);
      else done += w;
    }
  }
  if (rc == TERN_OK && fsync(out) < 0) rc = tern_fail_errno(to);
  free(buf);
  close(in);
  if (close(out) < 0 && rc == TERN_OK) rc = tern_fail_errno(to);
  return rc;
}

static int link_file(const char *from, const char *to) {
  if (link(from, to) == 0) return TERN_OK;
  if (errno == ENOENT) return 1; /* a file the segment lacks */
  if (errno == EXDEV || errno == EPERM || errno == EMLINK) return tern_file_copy(from, to);
  return tern_fail_errno(to);
}

int tern_seg_link(const char *from_dir, const char *from_name, const char *to_dir,
                  const char *to_name) {
  int rc = TERN_OK;
  for (int f = 0; rc == TERN_OK && f < TERN_SEG_NFILES; f++) {
    char *from = tern_seg_path(from_dir, from_name, f, 0), *to = tern_seg_path(to_dir, to_name, f, 0);
    rc = from && to ? link_file(from, to) : tern_fail(TERN_ENOMEM, "out of memory");
    if (rc > 0) rc = TERN_OK;
    free(from);
    free(to);
  }
  if (rc != TERN_OK) tern_seg_remove(to_dir, to_name);
  return rc;
}
