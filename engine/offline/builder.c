/* SPDX-License-Identifier: MIT */
/*
 * builder.c — segments built outside an index (tern.h, "build"): the
 * public tern_builder over the codec's segment writer.
 *
 * The primary keys stream to the writer as they are added (the unique
 * field comes first in a segment: its name "" sorts before every field),
 * so keys and values cost no memory; the secondary terms are inverted at
 * finish, so they are kept until then as (term, doc) tuples per field,
 * their bytes in an arena.  The directory is built as PATH.tmp and renamed
 * to PATH once every file and PATH.tmp itself are durable, so PATH exists
 * only whole.
 */
#include "engine/offline/builder.h"

#include "codec/segment.h"
#include "codec/status.h"
#include "engine/util/arena.h"
#include "engine/state/index.h"
#include "engine/buffer/memseg.h"
#include "engine/util/path.h"
#include "engine/util/sort.h"
#include "engine/util/vec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The number a built segment's files carry: any will do (an index renames
 * them on ingest); 1 is the first an index hands out. */
#define BUILT_SEGMENT_NUMBER 1u

typedef struct bfield {
  uint8_t *name; /* owned, NUL-terminated */
  size_t len;
  tern_keyref *t; /* (term, doc in aux), in doc order */
  size_t n, cap;
} bfield;

struct tern_builder {
  char *path, *tmp;
  char name[TERN_SEGNAME_MAX];
  tern_options o; /* field names owned */
  tern_segw *w;
  int failed; /* a write failed: only abort is left */
  uint64_t ndocs;
  uint8_t first[TERN_KEY_MAX], last[TERN_KEY_MAX];
  size_t first_len, last_len;
  bfield *fields;
  size_t nfields, fields_cap;
  size_t hint;      /* the field found last */
  tern_arena terms; /* bytes of the secondary terms */
};

/* ---------------------------------------------------------------- messages */

void tern_escape_key(const void *key, size_t len, char *out, size_t cap) {
  static const char hex[] = "0123456789abcdef";
  const uint8_t *k = key;
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    char esc[5];
    size_t n = 0;
    uint8_t c = k[i];
    if (c == '\\' || c == '\t' || c == '\n' || c == '\r') {
      esc[n++] = '\\';
      esc[n++] = c == '\\' ? '\\' : c == '\t' ? 't' : c == '\n' ? 'n' : 'r';
    } else if (c < 0x20 || c == 0x7f) {
      esc[n++] = '\\';
      esc[n++] = 'x';
      esc[n++] = hex[c >> 4];
      esc[n++] = hex[c & 15];
    } else {
      esc[n++] = (char)c;
    }
    if (o + n + 4 > cap) { /* room for "..." and the NUL */
      if (cap >= 4) memcpy(out + (o < cap - 4 ? o : cap - 4), "...", 4);
      return;
    }
    memcpy(out + o, esc, n);
    o += n;
  }
  if (cap) out[o < cap ? o : cap - 1] = '\0';
}

/* ---------------------------------------------------------------- options */

static void options_free(tern_options *o) {
  for (size_t i = 0; i < o->nfields; i++)
    free((char *)o->fields[i].field);
  free((void *)o->fields);
  o->fields = NULL;
  o->nfields = 0;
}

static int options_copy(tern_options *dst, const tern_options *src) {
  tern_options_init(dst);
  if (!src) return TERN_OK;
  if (src->version != TERN_OPTIONS_VERSION)
    return tern_fail(TERN_EINVAL, "builder: options version %d, expected %d", src->version,
                     TERN_OPTIONS_VERSION);
  if (src->pulsing_threshold > TERN_THRESHOLD_MAX || src->inline_value_max > TERN_INLINE_MAX ||
      src->bloom_bits_per_key > 64 || (src->nfields && !src->fields) || src->nfields > 4096)
    return tern_fail(TERN_EINVAL, "builder: options out of range");
  dst->pulsing_threshold = src->pulsing_threshold;
  dst->inline_value_max = src->inline_value_max;
  dst->bloom_bits_per_key = src->bloom_bits_per_key;
  if (!src->nfields) return TERN_OK;
  tern_field_option *f = calloc(src->nfields, sizeof *f);
  if (!f) return tern_fail(TERN_ENOMEM, "builder: out of memory");
  dst->fields = f;
  for (size_t i = 0; i < src->nfields; i++) {
    const char *name = src->fields[i].field;
    size_t len = name ? strnlen(name, TERN_FIELD_MAX + 1) : 0;
    if (len == 0 || len > TERN_FIELD_MAX || src->fields[i].threshold > TERN_THRESHOLD_MAX)
      return tern_fail(TERN_EINVAL, "builder: field option %zu out of range", i);
    if (!(f[i].field = strdup(name))) return tern_fail(TERN_ENOMEM, "builder: out of memory");
    f[i].threshold = src->fields[i].threshold;
    dst->nfields = i + 1;
  }
  return TERN_OK;
}

/* ---------------------------------------------------------------- directories */

/* Removes the leftover PATH.tmp of an interrupted build: segment files
 * only; anything else there is not ours to remove. */
static int remove_tmp(const char *tmp) {
  DIR *d = opendir(tmp);
  if (!d) return errno == ENOENT ? TERN_OK : tern_fail_errno(tmp);
  struct dirent *e;
  int rc = TERN_OK;
  char seg[TERN_SEGNAME_MAX];
  while (rc == TERN_OK && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (!tern_seg_file_segment(e->d_name, seg, sizeof seg)) {
      rc = tern_fail(TERN_EINVAL, "%s: holds %s, not a segment file: not removing it", tmp,
                     e->d_name);
      break;
    }
    char *p = tern_path_join(tmp, e->d_name);
    if (!p)
      rc = tern_fail(TERN_ENOMEM, "builder: out of memory");
    else
      rc = tern_io_unlink(p);
    free(p);
  }
  closedir(d);
  if (rc == TERN_OK && rmdir(tmp) < 0 && errno != ENOENT) rc = tern_fail_errno(tmp);
  return rc;
}

static int fsync_parent(const char *path) {
  char *copy = strdup(path);
  if (!copy) return tern_fail(TERN_ENOMEM, "out of memory");
  int rc = tern_fsync_dir(dirname(copy));
  free(copy);
  return rc;
}

/* ---------------------------------------------------------------- open */

static void builder_free(tern_builder *b) {
  if (b->w) tern_segw_abort(b->w);
  for (size_t i = 0; i < b->nfields; i++) {
    free(b->fields[i].name);
    free(b->fields[i].t);
  }
  free(b->fields);
  tern_arena_free(&b->terms);
  options_free(&b->o);
  free(b->path);
  free(b->tmp);
  free(b);
}

static int builder_start(tern_builder *b) {
  int exists;
  TERN_TRY(tern_dir_absent_or_empty(b->path, "", &exists));
  TERN_TRY(remove_tmp(b->tmp));
  if (mkdir(b->tmp, 0777) < 0) return tern_fail_errno(b->tmp);
  tern_segw_options so;
  tern_segw_options_init(&so);
  so.inline_value_max = b->o.inline_value_max;
  so.bloom_bits_per_key = b->o.bloom_bits_per_key;
  tern_segment_name(b->name, BUILT_SEGMENT_NUMBER);
  int rc = tern_segw_open(&b->w, b->tmp, b->name, &so);
  if (rc == TERN_OK) rc = tern_segw_field(b->w, "", 0, TERN_FIELD_UNIQUE, b->o.pulsing_threshold);
  if (rc != TERN_OK) {
    tern_segw_abort(b->w);
    b->w = NULL;
    rmdir(b->tmp);
  }
  return rc;
}

int tern_builder_open(tern_builder **out, const char *path, const tern_options *opts) {
  tern_clear_error();
  if (!out) return tern_fail(TERN_EINVAL, "tern_builder_open: NULL out");
  *out = NULL;
  if (!path || !*path) return tern_fail(TERN_EINVAL, "tern_builder_open: no path");
  tern_builder *b = calloc(1, sizeof *b);
  if (!b) return tern_fail(TERN_ENOMEM, "builder: out of memory");
  tern_arena_init(&b->terms);
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/')
    n--; /* "out/" names out */
  b->path = strndup(path, n);
  b->tmp = malloc(n + 5);
  int rc = b->path && b->tmp ? options_copy(&b->o, opts) : tern_fail(TERN_ENOMEM, "out of memory");
  if (rc == TERN_OK) {
    snprintf(b->tmp, n + 5, "%s.tmp", b->path);
    rc = builder_start(b);
  }
  if (rc != TERN_OK) {
    builder_free(b);
    return rc;
  }
  *out = b;
  return TERN_OK;
}

/* ---------------------------------------------------------------- add */

static int check_doc(const tern_builder *b, const void *key, size_t klen, const void *val,
                     size_t vlen, const tern_term *terms, size_t nterms) {
  if (!key || klen == 0 || klen > TERN_KEY_MAX)
    return tern_fail(TERN_EINVAL, "builder: key of %zu bytes (1 to %u)", klen, TERN_KEY_MAX);
  if ((!val && vlen) || vlen > TERN_VALUE_MAX)
    return tern_fail(TERN_EINVAL, "builder: value of %zu bytes (0 to %u)", vlen, TERN_VALUE_MAX);
  if (nterms && !terms) return tern_fail(TERN_EINVAL, "builder: %zu terms and no array", nterms);
  for (size_t i = 0; i < nterms; i++) {
    size_t fl = terms[i].field ? strnlen(terms[i].field, TERN_FIELD_MAX + 1) : 0;
    if (fl == 0 || fl > TERN_FIELD_MAX)
      return tern_fail(TERN_EINVAL, "builder: term %zu: field name of 1 to %u bytes wanted", i,
                       TERN_FIELD_MAX);
    if (!terms[i].term || terms[i].len == 0 || terms[i].len > TERN_KEY_MAX)
      return tern_fail(TERN_EINVAL, "builder: term %zu: %zu bytes (1 to %u)", i, terms[i].len,
                       TERN_KEY_MAX);
  }
  if (b->ndocs >= UINT32_MAX)
    return tern_fail(TERN_EINVAL, "builder: a segment holds at most %u documents", UINT32_MAX);
  if (b->ndocs && tern_key_cmp(b->last, b->last_len, key, klen) >= 0) {
    char k[200], prev[200];
    tern_escape_key(key, klen, k, sizeof k);
    tern_escape_key(b->last, b->last_len, prev, sizeof prev);
    if (tern_key_cmp(b->last, b->last_len, key, klen) == 0)
      return tern_fail(TERN_EINVAL, "builder: duplicate key \"%s\"", k);
    return tern_fail(TERN_EINVAL,
                     "builder: key \"%s\" out of order: it sorts before \"%s\" added before "
                     "it (keys must strictly increase)",
                     k, prev);
  }
  return TERN_OK;
}

static bfield *field_of(tern_builder *b, const char *name) {
  size_t len = strlen(name);
  if (b->hint < b->nfields && b->fields[b->hint].len == len &&
      !memcmp(b->fields[b->hint].name, name, len))
    return &b->fields[b->hint];
  for (size_t i = 0; i < b->nfields; i++)
    if (b->fields[i].len == len && !memcmp(b->fields[i].name, name, len)) {
      b->hint = i;
      return &b->fields[i];
    }
  bfield *f = tern_vec_room(b->fields, b->nfields, &b->fields_cap, sizeof *b->fields);
  if (!f) return NULL;
  b->fields = f;
  f = &b->fields[b->nfields];
  memset(f, 0, sizeof *f);
  if (!(f->name = (uint8_t *)strdup(name))) return NULL;
  f->len = len;
  b->hint = b->nfields++;
  return f;
}

static int keep_terms(tern_builder *b, const tern_term *terms, size_t nterms, uint32_t doc) {
  for (size_t i = 0; i < nterms; i++) {
    bfield *f = field_of(b, terms[i].field);
    tern_keyref *t = f ? tern_vec_room(f->t, f->n, &f->cap, sizeof *f->t) : NULL;
    uint8_t *bytes = t ? tern_arena_alloc(&b->terms, terms[i].len) : NULL;
    if (!bytes) return tern_fail(TERN_ENOMEM, "builder: out of memory for the terms");
    f->t = t;
    memcpy(bytes, terms[i].term, terms[i].len);
    f->t[f->n++] = (tern_keyref){bytes, (uint32_t)terms[i].len, doc};
  }
  return TERN_OK;
}

int tern_builder_add(tern_builder *b, const void *key, size_t klen, const void *val, size_t vlen,
                     const tern_term *terms, size_t nterms) {
  tern_clear_error();
  if (!b) return tern_fail(TERN_EINVAL, "tern_builder_add: NULL builder");
  if (b->failed)
    return tern_fail(b->failed, "builder %s: an earlier write failed; abort it", b->path);
  TERN_TRY(check_doc(b, key, klen, val, vlen, terms, nterms));
  uint32_t doc = (uint32_t)b->ndocs;
  int rc = tern_segw_term(b->w, key, klen, &doc, 1, val, vlen);
  if (rc == TERN_OK) rc = keep_terms(b, terms, nterms, doc);
  if (rc != TERN_OK) {
    b->failed = rc;
    return rc;
  }
  if (b->ndocs == 0) {
    memcpy(b->first, key, klen);
    b->first_len = klen;
  }
  memcpy(b->last, key, klen);
  b->last_len = klen;
  b->ndocs++;
  return TERN_OK;
}

/* ---------------------------------------------------------------- finish */

/* One field's tuples sorted by term (stable: docs stay ascending), each
 * term written with its distinct docs. */
static int write_field(tern_builder *b, const bfield *f) {
  TERN_TRY(
      tern_segw_field(b->w, f->name, f->len, 0, tern_options_threshold(&b->o, f->name, f->len)));
  uint32_t *perm = malloc((f->n ? f->n : 1) * sizeof *perm);
  uint32_t *docs = malloc((f->n ? f->n : 1) * sizeof *docs);
  int rc = perm && docs ? tern_sort_by_key(perm, f->t, sizeof *f->t, f->n, NULL)
                        : tern_fail(TERN_ENOMEM, "builder: out of memory");
  for (size_t i = 0; rc == TERN_OK && i < f->n;) {
    const tern_keyref *k = &f->t[perm[i]];
    uint32_t nd = 0;
    size_t j = i;
    for (; j < f->n; j++) {
      const tern_keyref *kj = &f->t[perm[j]];
      if (kj->len != k->len || memcmp(kj->p, k->p, k->len)) break;
      if (nd == 0 || docs[nd - 1] != kj->aux) docs[nd++] = kj->aux;
    }
    rc = tern_segw_term(b->w, k->p, k->len, docs, nd, NULL, 0);
    i = j;
  }
  free(perm);
  free(docs);
  return rc;
}

static int write_fields(tern_builder *b) {
  tern_keyref *names = malloc((b->nfields ? b->nfields : 1) * sizeof *names);
  uint32_t *order = malloc((b->nfields ? b->nfields : 1) * sizeof *order);
  int rc = names && order ? TERN_OK : tern_fail(TERN_ENOMEM, "builder: out of memory");
  for (size_t i = 0; rc == TERN_OK && i < b->nfields; i++)
    names[i] = (tern_keyref){b->fields[i].name, (uint32_t)b->fields[i].len, 0};
  if (rc == TERN_OK) rc = tern_sort_by_key(order, names, sizeof *names, b->nfields, NULL);
  for (size_t i = 0; rc == TERN_OK && i < b->nfields; i++)
    rc = write_field(b, &b->fields[order[i]]);
  free(names);
  free(order);
  return rc;
}

static uint64_t dir_bytes(const char *dir) {
  uint64_t total = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    char *p = tern_path_join(dir, e->d_name);
    if (p && stat(p, &st) == 0 && S_ISREG(st.st_mode)) total += (uint64_t)st.st_size;
    free(p);
  }
  closedir(d);
  return total;
}

static void fill_info(const tern_builder *b, tern_build_info *info) {
  memset(info, 0, sizeof *info);
  info->documents = b->ndocs;
  memcpy(info->first_key, b->first, b->first_len);
  info->first_len = b->first_len;
  memcpy(info->last_key, b->last, b->last_len);
  info->last_len = b->last_len;
  info->bytes = dir_bytes(b->path);
  if (b->ndocs) snprintf(info->name, sizeof info->name, "%s", b->name);
}

/* The segment's files, durable in PATH.tmp; then PATH.tmp renamed to PATH
 * (over an empty PATH directory: rename(2) allows it) and the rename made
 * durable. */
static int finish_files(tern_builder *b) {
  int rc = TERN_OK;
  if (b->ndocs) {
    rc = write_fields(b);
    if (rc == TERN_OK) {
      rc = tern_segw_finish(b->w, (uint32_t)b->ndocs); /* fsyncs PATH.tmp too */
      b->w = NULL;
    }
  } else {
    tern_segw_abort(b->w); /* no document: no segment, an empty directory */
    b->w = NULL;
    rc = tern_fsync_dir(b->tmp);
  }
  if (rc == TERN_OK && rename(b->tmp, b->path) < 0) rc = tern_fail_errno(b->path);
  if (rc == TERN_OK && (rc = fsync_parent(b->path)) != TERN_OK)
    (void)rename(b->path, b->tmp); /* not durable: not finished (the caller's cleanup) */
  return rc;
}

int tern_builder_finish(tern_builder *b, tern_build_info *info) {
  tern_clear_error();
  if (!b) return tern_fail(TERN_EINVAL, "tern_builder_finish: NULL builder");
  int rc = b->failed ? tern_fail(b->failed, "builder %s: an earlier write failed", b->path)
                     : finish_files(b);
  if (rc == TERN_OK) {
    if (info) fill_info(b, info);
  } else {
    if (b->w) tern_segw_abort(b->w);
    b->w = NULL;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tern_errmsg());
    (void)remove_tmp(b->tmp); /* the failure's message, not the cleanup's */
    tern_fail(rc, "%s", msg);
  }
  builder_free(b);
  return rc;
}

int tern_builder_abort(tern_builder *b) {
  tern_clear_error();
  if (!b) return TERN_OK;
  if (b->w) tern_segw_abort(b->w);
  b->w = NULL;
  int rc = remove_tmp(b->tmp);
  builder_free(b);
  return rc;
}
