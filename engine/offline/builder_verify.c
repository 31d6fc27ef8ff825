/* SPDX-License-Identifier: MIT */
/*
 * builder_verify.c — checking a built segment directory on its own
 * (tern_builder_verify, tern.h): that it holds one segment's five files
 * and nothing else, then the codec's full check of that segment, then
 * what an index needs of it (a primary-key field whose doc ids are the
 * keys' ranks, one per document).
 */
#include "engine/offline/builder.h"

#include "codec/segment.h"
#include "codec/status.h"
#include "engine/state/index.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const k_ext[] = {".tim", ".tix", ".doc", ".flt", ".val"};
enum { NEXT = 5 };

/* Which of the five extensions `file` ends with (-1: none). */
static int ext_of(const char *file, size_t len) {
  for (int i = 0; i < NEXT; i++) {
    size_t el = strlen(k_ext[i]);
    if (len > el && !memcmp(file + len - el, k_ext[i], el)) return i;
  }
  return -1;
}

/* The one segment's name in dir, every file of it present, no other file.
 * *empty 1 for an empty directory (a build of no document). */
static int find_segment(const char *dir, char name[TERN_SEGNAME_MAX], int *empty) {
  DIR *d = opendir(dir);
  if (!d) return tern_fail_errno(dir);
  struct dirent *e;
  int rc = TERN_OK, seen = 0;
  unsigned have = 0;
  name[0] = '\0';
  while (rc == TERN_OK && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    size_t len = strlen(e->d_name);
    int x = ext_of(e->d_name, len);
    size_t nl = x < 0 ? 0 : len - strlen(k_ext[x]);
    if (x < 0 || nl >= TERN_SEGNAME_MAX) {
      rc = tern_fail(TERN_ECORRUPT,
                     "%s/%s: not a segment file (a built segment holds only its "
                     "five files)",
                     dir, e->d_name);
    } else if (seen && (strlen(name) != nl || memcmp(name, e->d_name, nl))) {
      rc = tern_fail(TERN_ECORRUPT, "%s/%s: a file of a second segment (%s)", dir, e->d_name, name);
    } else {
      memcpy(name, e->d_name, nl);
      name[nl] = '\0';
      seen = 1;
      have |= 1u << x;
    }
  }
  closedir(d);
  TERN_TRY(rc);
  *empty = !seen;
  for (int i = 0; seen && i < NEXT; i++)
    if (!(have & (1u << i)))
      return tern_fail(TERN_ECORRUPT, "%s/%s%s: missing", dir, name, k_ext[i]);
  return TERN_OK;
}

static int check_keys(const char *dir, const char *name, const tern_seg *s, tern_build_info *info) {
  const tern_seg_field *u = tern_seg_unique_field(s);
  if (!u) return tern_fail(TERN_ECORRUPT, "%s/%s.tix: no primary-key field", dir, name);
  tern_field_info fi;
  tern_seg_field_info(u, &fi);
  if (fi.nterms != tern_seg_max_doc(s) || fi.nterms == 0)
    return tern_fail(TERN_ECORRUPT, "%s/%s.tix: %llu keys for %u documents", dir, name,
                     (unsigned long long)fi.nterms, tern_seg_max_doc(s));
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  tern_slice k, v;
  /* Doc ids must be ranks (what an index's reads assume): the last doc's
   * key is the field's last key. */
  int rc = tern_seg_doc(s, tern_seg_max_doc(s) - 1, &c, &k, &v);
  if (rc == TERN_EINVAL)
    rc = tern_fail(TERN_ECORRUPT, "%s/%s.tix: doc ids are not the keys' ranks", dir, name);
  if (rc == TERN_OK && (k.len != fi.max_len || memcmp(k.data, fi.max_term, k.len)))
    rc = tern_fail(TERN_ECORRUPT, "%s/%s.tim: the last document is not the last key", dir, name);
  tern_seg_cursor_release(&c);
  TERN_TRY(rc);
  if (info) {
    info->documents = fi.nterms;
    memcpy(info->first_key, fi.min_term, fi.min_len);
    info->first_len = fi.min_len;
    memcpy(info->last_key, fi.max_term, fi.max_len);
    info->last_len = fi.max_len;
    tern_seg_summary sum;
    tern_seg_summarize(s, &sum);
    info->bytes = sum.bytes;
    snprintf(info->name, sizeof info->name, "%s", name);
  }
  return TERN_OK;
}

int tern_builder_verify(const char *path, tern_build_info *info) {
  tern_clear_error();
  if (!path || !*path) return tern_fail(TERN_EINVAL, "tern_builder_verify: no path");
  if (info) memset(info, 0, sizeof *info);
  struct stat st;
  if (stat(path, &st) < 0) return tern_fail_errno(path);
  if (!S_ISDIR(st.st_mode))
    return tern_fail(TERN_ECORRUPT, "%s: not a directory (a built segment is one)", path);
  char name[TERN_SEGNAME_MAX];
  int empty;
  TERN_TRY(find_segment(path, name, &empty));
  if (empty) return TERN_OK; /* a build of no document */
  tern_seg *s;
  TERN_TRY(tern_seg_open(&s, path, name, TERN_IO_PREAD));
  int rc = tern_seg_verify(s);
  if (rc == TERN_OK) rc = check_keys(path, name, s, info);
  tern_seg_close(s);
  return rc;
}
