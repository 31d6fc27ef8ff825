/* SPDX-License-Identifier: MIT */
/*
 * segment_open.c — opening a segment: NAME.tix is read whole (one read;
 * mapped in mmap mode, copied in pread mode), its checksum verified and
 * its field table and terms indexes decoded; the other files are opened
 * and their sizes checked against it, and nothing more is read.  Their headers and contents are covered by
 * page checksums — in the last 4 bytes of each page of .tim, in .tix for
 * the others — salted with the segment id, the file kind and the page
 * number, so another segment's file or a moved page fails like damage;
 * checked page by page when first read, and whole by tern_seg_verify.
 * The filter is probed in place (segment_filter.c).
 */
#include "codec/frame.h"
#include "codec/segment_internal.h"
#include "codec/spare_buf.h"
#include "codec/status.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define TIX_MAX_SIZE (1ull << 32)  /* a larger index file is not one we wrote */
#define TERN_FILE_MAX (1ull << 56) /* nor a larger data file */

static int term_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c;
  return alen < blen ? -1 : alen > blen;
}

/* Versions before this one are not read (no index of them was deployed). */
static int check_version(const char *path, uint32_t version) {
  if (version == TERN_SEG_VERSION) return TERN_OK;
  return tern_fail(TERN_EVERSION, "%s: segment format version %u, this tern reads only %u", path,
                   version, TERN_SEG_VERSION);
}

/* Reads NAME.tix whole and checks it: in mmap mode through a mapping kept
 * open in *map (a fresh process's open then takes no page faults on a
 * buffer of its own, and copies nothing: docs/ARCHITECTURE.md, "A fresh
 * process's open"), else into a malloc'd *buf.  *file: its bytes. */
static int read_framed(const char *path, uint32_t kind, tern_io_mode mode, tern_rfile **map,
                       uint8_t **buf, const uint8_t **file, const uint8_t **body,
                       size_t *body_len, uint64_t *size) {
  tern_rfile *f;
  *buf = NULL;
  *map = NULL;
  /* One read of it all: no read-ahead advice. */
  TERN_TRY(mode == TERN_IO_MMAP ? tern_rfile_open_whole_mapped(&f, path)
                                : tern_rfile_open_whole(&f, path));
  uint64_t n = tern_rfile_size(f);
  int rc = TERN_OK;
  if (n < TERN_FRAME_HEADER_SIZE + TERN_FRAME_FOOTER_SIZE || n > TIX_MAX_SIZE)
    rc = tern_fail(TERN_ECORRUPT, "%s: %llu bytes: not a segment file", path,
                   (unsigned long long)n);
  /* pread mode: the buffer tern_open readied (its pages faulted while it
   * waited for the catalog), else a new one. */
  if (rc == TERN_OK && mode != TERN_IO_MMAP && !(*buf = tern_spare_take(path, (size_t)n)) &&
      !(*buf = malloc((size_t)n)))
    rc = tern_fail(TERN_ENOMEM, "%s: out of memory", path);
  const uint8_t *p = NULL;
  if (rc == TERN_OK) rc = tern_rfile_read(f, 0, (size_t)n, *buf, &p);
  uint32_t version;
  /* The version first: an older file is TERN_EVERSION, not a bad checksum. */
  if (rc == TERN_OK)
    rc = tern_frame_check_header(p, (size_t)n, kind, TERN_SEG_VERSION, NULL, path, &version);
  if (rc == TERN_OK) rc = check_version(path, version);
  if (rc == TERN_OK)
    rc = tern_frame_open_buffer(p, (size_t)n, kind, TERN_SEG_VERSION, NULL, path, &version,
                                body, body_len);
  if (rc != TERN_OK || mode != TERN_IO_MMAP) tern_rfile_close(f);
  if (rc != TERN_OK) {
    free(*buf);
    *buf = NULL;
    return rc;
  }
  if (mode == TERN_IO_MMAP) *map = f;
  *file = p;
  *size = n;
  return TERN_OK;
}

/* Opens one of the large files and checks its size against the segment's
 * index: no read (its header is in page 0, checked with the page). */
static int open_data_file(tern_seg *s, const char *dir, const char *name, int file,
                          tern_io_mode mode, uint64_t want, tern_rfile **out) {
  if (!*out) { /* not opened ahead (open_ahead) */
    char *path = tern_seg_path(dir, name, file, 0);
    if (!path) return tern_fail(TERN_ENOMEM, "out of memory");
    int rc = tern_rfile_open(out, path, mode);
    free(path);
    if (rc != TERN_OK) return rc;
  }
  tern_rfile *f = *out;
  uint64_t size = tern_rfile_size(f);
  if (size != want)
    return tern_fail(TERN_ECORRUPT, "%s: %llu bytes, %llu expected%s", tern_rfile_path(f),
                     (unsigned long long)size, (unsigned long long)want,
                     size < want ? ": truncated" : "");
  /* Opened ahead unmapped (open_ahead): mapped now if a read may ever
   * ask for a byte of it, i.e. it holds more than its frame. */
  if (mode == TERN_IO_MMAP && tern_rfile_mode(f) == TERN_IO_PREAD &&
      size > TERN_FRAME_HEADER_SIZE + TERN_FRAME_FOOTER_SIZE)
    TERN_TRY(tern_rfile_map_now(f));
  uint64_t seed = tern_seg_page_seed(s->segid, file);
  if (file == SEG_TIM) {
    s->tim_map = tern_rfile_map(f);
    return tern_rfile_set_page_trailers(f, seed); /* each page holds its own */
  }
  return tern_rfile_set_page_sums(f, s->sums[file == SEG_DOC ? 0 : 1], seed);
}

/* ------------------------------------------------------- the field table */

typedef struct tix_reader {
  const uint8_t *p, *end;
  const char *what;
} tix_reader;

static int tix_bad(const tix_reader *r, const char *why) {
  return tern_fail(TERN_ECORRUPT, "%s: field table: %s", r->what, why);
}

static int tix_u64(tix_reader *r, uint64_t *v, uint64_t max, const char *what) {
  if (tern_get_varint(&r->p, r->end, v) != 0) return tix_bad(r, "truncated");
  if (*v > max) return tern_fail(TERN_ECORRUPT, "%s: field table: %s %llu out of range", r->what,
                                 what, (unsigned long long)*v);
  return TERN_OK;
}

static int tix_bytes(tix_reader *r, const uint8_t **b, size_t *len, size_t min, size_t max) {
  uint64_t n;
  TERN_TRY(tix_u64(r, &n, max, "length"));
  if (n < min) return tix_bad(r, "string too short");
  if (n > (uint64_t)(r->end - r->p)) return tix_bad(r, "truncated");
  *b = r->p;
  *len = (size_t)n;
  r->p += n;
  return TERN_OK;
}

static int parse_field(tern_seg *s, tix_reader *r, tern_seg_field *f, uint64_t *next_block) {
  uint64_t v;
  f->seg = s;
  TERN_TRY(tix_bytes(r, &f->name, &f->name_len, 0, TERN_FIELD_MAX));
  TERN_TRY(tix_u64(r, &v, UINT32_MAX, "flags"));
  f->flags = (uint32_t)v;
  if (f->flags & ~TERN_FIELD_FLAGS_KNOWN) return tix_bad(r, "unknown field flags");
  if ((f->flags & TERN_FIELD_DOC_ORDERED) && !(f->flags & TERN_FIELD_UNIQUE))
    return tix_bad(r, "doc-ordered flag on a non-unique field");
  TERN_TRY(tix_u64(r, &v, TERN_PULSE_MAX, "threshold"));
  f->threshold = (uint32_t)v;
  TERN_TRY(tix_u64(r, &f->nterms, UINT64_MAX >> 1, "term count"));
  TERN_TRY(tix_u64(r, &f->pulsed_terms, f->nterms, "pulsed term count"));
  TERN_TRY(tix_u64(r, &f->nblocks, f->nterms, "block count"));
  if ((f->nterms == 0) != (f->nblocks == 0)) return tix_bad(r, "terms without blocks");
  if (f->nblocks > s->nblocks - *next_block) return tix_bad(r, "more blocks than the file");
  f->first_block = *next_block;
  *next_block += f->nblocks;
  if (f->nterms) {
    TERN_TRY(tix_bytes(r, &f->min, &f->min_len, 1, TERN_KEY_MAX));
    TERN_TRY(tix_bytes(r, &f->max, &f->max_len, 1, TERN_KEY_MAX));
    int c = term_cmp(f->min, f->min_len, f->max, f->max_len);
    if (c > 0 || (c == 0) != (f->nterms == 1)) return tix_bad(r, "bad term range");
  }
  TERN_TRY(tern_terms_index_decode(&f->index, &r->p, r->end, f->nblocks, f->nterms,
                                   TERN_TB_MAX_ENTRIES, r->what));
  f->tbf.threshold = f->threshold;
  f->tbf.inline_max = s->inline_max;
  f->tbf.has_values = (f->flags & TERN_FIELD_UNIQUE) != 0;
  f->tbf.max_doc = s->max_doc;
  return TERN_OK;
}

static uint64_t tim_size(const tern_seg *s) {
  return TERN_BLOCK_SIZE * (s->nblocks + 1) + TERN_FRAME_FOOTER_SIZE;
}

/* The page checksums of .doc, .val and .flt: the rest of the body,
 * exactly (.tim's pages carry their own). */
static int parse_sums(tern_seg *s, tix_reader *r) {
  const uint64_t sizes[3] = {s->doc_size, s->val_size, s->flt_size};
  for (int k = 0; k < 3; k++) {
    uint64_t n = 4 * tern_io_npages(sizes[k]);
    if (n > (uint64_t)(r->end - r->p)) return tix_bad(r, "page checksums truncated");
    s->sums[k] = r->p;
    r->p += n;
  }
  if (r->p != r->end) return tix_bad(r, "trailing bytes");
  return TERN_OK;
}

int tern_seg_parse_index(tern_seg *s, const uint8_t *body, size_t len, const char *what) {
  tix_reader r = {body, body + len, what};
  uint64_t v, nfields;
  TERN_TRY(tix_u64(&r, &v, UINT32_MAX, "max_doc"));
  s->max_doc = (uint32_t)v;
  TERN_TRY(tix_u64(&r, &v, TERN_INLINE_MAX, "inline value limit"));
  s->inline_max = (uint32_t)v;
  TERN_TRY(tix_u64(&r, &v, 64, "filter bits per key"));
  s->bloom_bits = (uint32_t)v;
  TERN_TRY(tix_u64(&r, &nfields, len, "field count"));
  TERN_TRY(tix_u64(&r, &s->nblocks, TERN_FILE_MAX / TERN_BLOCK_SIZE - 2, "block count"));
  TERN_TRY(tix_u64(&r, &s->doc_size, TERN_FILE_MAX, "postings file size"));
  TERN_TRY(tix_u64(&r, &s->val_size, TERN_FILE_MAX, "values file size"));
  TERN_TRY(tix_u64(&r, &s->flt_size, TERN_FILE_MAX, "filter file size"));
  if (s->doc_size < TERN_FRAME_HEADER_SIZE + TERN_FRAME_FOOTER_SIZE ||
      s->val_size < TERN_FRAME_HEADER_SIZE + TERN_FRAME_FOOTER_SIZE ||
      s->flt_size < TERN_FRAME_HEADER_SIZE + TERN_FRAME_FOOTER_SIZE)
    return tix_bad(&r, "data file smaller than its frame");
  s->fields = calloc(nfields ? nfields : 1, sizeof *s->fields);
  if (!s->fields) return tern_fail(TERN_ENOMEM, "%s: out of memory", what);
  uint64_t next_block = 0;
  for (uint64_t i = 0; i < nfields; i++) {
    tern_seg_field *f = &s->fields[i];
    int rc = parse_field(s, &r, f, &next_block);
    s->nfields = i + (rc == TERN_OK); /* what close must free */
    if (rc != TERN_OK) return rc;
    if (i && term_cmp(f[-1].name, f[-1].name_len, f->name, f->name_len) >= 0)
      return tix_bad(&r, "field names not ascending");
    if (f->flags & TERN_FIELD_UNIQUE) {
      if (s->unique) return tix_bad(&r, "two unique fields");
      s->unique = f;
    }
  }
  if (next_block != s->nblocks) return tix_bad(&r, "block counts do not add up");
  return parse_sums(s, &r);
}

/* ----------------------------------------------------------------- open */

/* Opens (and maps) the data files before NAME.tix is read, which they
 * need nothing of: a fresh process's open asks for NAME.tix before it
 * gets here (engine/index/open.c), and these system calls run while the
 * device reads it instead of after.  Nothing is trusted yet: their sizes
 * and page checksums are checked against NAME.tix once it is (open_files,
 * tern_seg_filter_open).  A file that fails to open is left for the
 * checked open to report, after NAME.tix's own errors. */
static void open_ahead(tern_seg *s, const char *dir, const char *name, tern_io_mode mode) {
  const int files[4] = {SEG_TIM, SEG_DOC, SEG_VAL, SEG_FLT};
  tern_rfile **into[4] = {&s->tim, &s->doc, &s->val, &s->flt};
  /* .doc and .val unmapped for now: a primary-key index's are mostly
   * their frame alone (pulsed postings, inline values), which no lookup
   * reads; open_data_file maps the others. */
  const tern_io_mode modes[4] = {mode, TERN_IO_PREAD, TERN_IO_PREAD, TERN_IO_MMAP};
  for (int i = 0; i < 4; i++) {
    char *path = tern_seg_path(dir, name, files[i], 0);
    if (path && tern_rfile_open(into[i], path, modes[i]) != TERN_OK) tern_clear_error();
    free(path);
  }
}

static int open_files(tern_seg *s, const char *dir, const char *name, tern_io_mode mode) {
  open_ahead(s, dir, name, mode);
  s->tix_path = tern_seg_path(dir, name, SEG_TIX, 0);
  if (!s->tix_path) return tern_fail(TERN_ENOMEM, "out of memory");
  const uint8_t *file = NULL, *body;
  size_t len;
  TERN_TRY(read_framed(s->tix_path, TERN_KIND_INDEX, mode, &s->tix, &s->arena, &file, &body, &len,
                       &s->tix_size));
  memcpy(s->segid, file + 16, TERN_SEGID_SIZE);
  TERN_TRY(tern_seg_parse_index(s, body, len, s->tix_path));
  TERN_TRY(open_data_file(s, dir, name, SEG_TIM, mode, tim_size(s), &s->tim));
  TERN_TRY(open_data_file(s, dir, name, SEG_DOC, mode, s->doc_size, &s->doc));
  TERN_TRY(open_data_file(s, dir, name, SEG_VAL, mode, s->val_size, &s->val));
  return tern_seg_filter_open(s, dir, name);
}

int tern_seg_open(tern_seg **out, const char *dir, const char *name, tern_io_mode mode) {
  *out = NULL;
  if (!dir || !name || !*name) return tern_fail(TERN_EINVAL, "segment open: bad name");
  tern_seg *s = calloc(1, sizeof *s);
  if (!s) return tern_fail(TERN_ENOMEM, "segment open: out of memory");
  s->uid = tern_seg_next_uid();
  int rc = open_files(s, dir, name, mode);
  if (rc != TERN_OK) {
    tern_seg_close(s);
    return rc;
  }
  tern_seg_headers_init(s);
  *out = s;
  return TERN_OK;
}

void tern_seg_close(tern_seg *s) {
  if (!s) return;
  tern_seg_headers_free(s);
  for (size_t i = 0; i < s->nfields; i++) tern_terms_index_free(&s->fields[i].index);
  free(s->fields);
  tern_rfile_close(s->tim);
  tern_rfile_close(s->doc);
  tern_rfile_close(s->val);
  tern_filter_free(s->filter);
  tern_rfile_close(s->flt);
  free((void *)s->flt_asked);
  free(s->arena);
  tern_rfile_close(s->tix);
  free(s->tix_path);
  free(s);
}

/* ------------------------------------------------------------ accessors */

uint32_t tern_seg_max_doc(const tern_seg *s) { return s->max_doc; }
const uint8_t *tern_seg_id(const tern_seg *s) { return s->segid; }
size_t tern_seg_nfields(const tern_seg *s) { return s->nfields; }
const tern_seg_field *tern_seg_field_at(const tern_seg *s, size_t i) {
  return i < s->nfields ? &s->fields[i] : NULL;
}
const tern_seg_field *tern_seg_unique_field(const tern_seg *s) { return s->unique; }

const tern_seg_field *tern_seg_find_field(const tern_seg *s, const void *name, size_t len) {
  size_t lo = 0, hi = s->nfields;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const tern_seg_field *f = &s->fields[mid];
    int c = term_cmp(f->name, f->name_len, name, len);
    if (c == 0) return f;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

void tern_seg_field_info(const tern_seg_field *f, tern_field_info *out) {
  out->name = f->name;
  out->name_len = f->name_len;
  out->flags = f->flags & TERN_FIELD_UNIQUE;
  out->threshold = f->threshold;
  out->nterms = f->nterms;
  out->pulsed_terms = f->pulsed_terms;
  out->min_term = f->nterms ? f->min : NULL;
  out->max_term = f->nterms ? f->max : NULL;
  out->min_len = f->nterms ? f->min_len : 0;
  out->max_len = f->nterms ? f->max_len : 0;
}

void tern_seg_summarize(const tern_seg *s, tern_seg_summary *out) {
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < s->nfields; i++) {
    out->terms += s->fields[i].nterms;
    out->pulsed_terms += s->fields[i].pulsed_terms;
  }
  out->bytes_terms = tern_rfile_size(s->tim);
  out->bytes_index = s->tix_size;
  out->bytes_postings = tern_rfile_size(s->doc);
  out->bytes_filter = s->flt_size;
  out->bytes_values = tern_rfile_size(s->val);
  out->bytes = out->bytes_terms + out->bytes_index + out->bytes_postings + out->bytes_filter +
               out->bytes_values;
}

void tern_seg_io_stats(const tern_seg *s, tern_seg_io *out) {
  tern_rfile_stats(s->tim, &out->terms);
  tern_rfile_stats(s->doc, &out->postings);
  tern_rfile_stats(s->val, &out->values);
  out->filter.reads = atomic_load_explicit(&s->flt_checked, memory_order_relaxed);
  out->filter.bytes = out->filter.reads * TERN_IO_PAGE;
}

void tern_seg_reset_io_stats(tern_seg *s) {
  tern_rfile_reset_stats(s->tim);
  tern_rfile_reset_stats(s->doc);
  tern_rfile_reset_stats(s->val);
  atomic_store_explicit(&((tern_seg *)s)->flt_checked, 0, memory_order_relaxed);
}

int tern_seg_evict(tern_seg *s) {
  TERN_TRY(tern_rfile_evict(s->tim));
  TERN_TRY(tern_rfile_evict(s->doc));
  TERN_TRY(tern_rfile_evict(s->val));
  TERN_TRY(tern_rfile_evict(s->flt));
  tern_seg_filter_forget(s); /* a cold process has asked for no filter page */
  s->uid = tern_seg_next_uid(); /* cursors must read their blocks again */
  return TERN_OK;
}

