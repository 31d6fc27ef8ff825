/* SPDX-License-Identifier: MIT */
/*
 * segment_writer.c — writes one segment (segment.h, docs/FORMAT.md).
 *
 * Terms stream through: each field's entries fill a terms block builder,
 * which is written to NAME.tim as a whole 4 KiB page, ending with the
 * page's checksum, as soon as the next term does not fit; postings go
 * through the field's pulsing chain into NAME.doc; values longer than the
 * inline limit go to NAME.val.  What must
 * be known before the index can be written — each block's separator and
 * entry count, each field's counts and range, the unique keys' hashes for
 * the filter — stays in memory (about 0.05 bytes per term, plus 8 per
 * unique key) until finish writes NAME.tix and NAME.flt and commits the
 * five files.
 *
 * Arguments are checked before anything is written, so a rejected call
 * (TERN_EINVAL) leaves the writer usable; a failed write poisons it, and
 * finish then removes every file.
 */
#include "codec/frame.h"
#include "codec/segment_internal.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

struct tern_segw {
  char *dir, *name;
  tern_segw_options o;
  uint8_t segid[TERN_SEGID_SIZE];
  tern_wfile *tim, *doc, *val;
  int failed;
  tern_bytebuf fields; /* field records written so far (.tix body after its head) */
  tern_bytebuf sums;   /* page checksums of .doc, .val, .flt, in that order */
  uint64_t tim_seed;   /* of the checksum each .tim page carries */
  uint64_t doc_size, val_size, flt_size;
  uint64_t nfields, nblocks;
  int unique_seen;
  uint32_t max_doc_seen;
  int any_doc;
  uint64_t *hashes; /* of the unique field's terms */
  size_t nhashes, hashes_cap;
  tern_tb_builder *tb;
  uint8_t page[TERN_BLOCK_SIZE];
  /* the current field */
  int in_field;
  uint8_t fname[TERN_FIELD_MAX];
  size_t fname_len;
  uint32_t flags, threshold;
  tern_tb_field tbf;
  tern_postings_writer *pw;
  uint64_t nterms, pulsed, field_blocks;
  int doc_ordered;
  uint8_t min[TERN_KEY_MAX], prev[TERN_KEY_MAX];
  size_t min_len, prev_len;
  tern_terms_index_builder index; /* the field's terms index */
  uint8_t sep[TERN_KEY_MAX];
  size_t sep_len;
};

void tern_segw_options_init(tern_segw_options *o) {
  o->inline_value_max = TERN_SEG_INLINE_DEFAULT;
  o->bloom_bits_per_key = 10;
  o->restart_interval = TERN_TB_RESTART;
}

static int term_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c;
  return alen < blen ? -1 : alen > blen;
}

static int poison(tern_segw *w, int rc) {
  w->failed = rc;
  return rc;
}

static void writer_free(tern_segw *w) {
  if (w->pw) w->pw->destroy(w->pw);
  tern_wfile_abort(w->tim);
  tern_wfile_abort(w->doc);
  tern_wfile_abort(w->val);
  tern_tb_builder_free(w->tb);
  tern_bytebuf_free(&w->fields);
  tern_bytebuf_free(&w->sums);
  tern_terms_index_builder_free(&w->index);
  free(w->hashes);
  free(w->dir);
  free(w->name);
  free(w);
}

_Static_assert(TERN_TB_PAGE == TERN_BLOCK_SIZE - TERN_IO_TRAILER,
               "a terms block fills its page but for the page's checksum");

/* NAME.tim's page 0: the frame header, zeros, the page's checksum. */
static int write_tim_head(tern_segw *w, tern_wfile *f) {
  memset(w->page, 0, sizeof w->page);
  tern_frame_header(w->page, TERN_KIND_TERMS, TERN_SEG_VERSION, w->segid);
  return tern_wfile_append_page(f, w->page, w->tim_seed);
}

/* .tim's pages carry their checksums; .tix is read whole at open and
 * checked by its frame; the others' page checksums go to .tix. */
static int sums_in_index(int file) { return file != SEG_TIM && file != SEG_TIX; }

static int create_file(tern_segw *w, int file, tern_wfile **out) {
  char *path = tern_seg_path(w->dir, w->name, file, 0);
  if (!path) return tern_fail(TERN_ENOMEM, "out of memory");
  int rc = tern_wfile_create(out, path);
  free(path);
  if (rc == TERN_OK && file == SEG_TIM) return write_tim_head(w, *out);
  if (rc == TERN_OK && sums_in_index(file))
    rc = tern_wfile_track_pages(*out, tern_seg_page_seed(w->segid, file));
  if (rc == TERN_OK) rc = tern_frame_write_header(*out, tern_seg_kind[file], TERN_SEG_VERSION, w->segid);
  return rc;
}

const uint8_t *tern_segw_id(const tern_segw *w) { return w->segid; }

int tern_segw_open(tern_segw **out, const char *dir, const char *name, const tern_segw_options *o) {
  *out = NULL;
  tern_segw_options def;
  if (!o) {
    tern_segw_options_init(&def);
    o = &def;
  }
  if (!dir || !name || !*name || strchr(name, '/'))
    return tern_fail(TERN_EINVAL, "segment writer: bad directory or segment name");
  if (o->inline_value_max > TERN_INLINE_MAX)
    return tern_fail(TERN_EINVAL, "segment writer: inline_value_max %u > %u", o->inline_value_max,
                     TERN_INLINE_MAX);
  if (o->bloom_bits_per_key > 64)
    return tern_fail(TERN_EINVAL, "segment writer: bloom_bits_per_key %u > 64",
                     o->bloom_bits_per_key);
  if (o->restart_interval < 1 || o->restart_interval > 255)
    return tern_fail(TERN_EINVAL, "segment writer: restart_interval %u not in 1..255",
                     o->restart_interval);
  tern_segw *w = calloc(1, sizeof *w);
  if (!w) return tern_fail(TERN_ENOMEM, "segment writer: out of memory");
  w->o = *o;
  w->dir = strdup(dir);
  w->name = strdup(name);
  int rc = (!w->dir || !w->name) ? tern_fail(TERN_ENOMEM, "segment writer: out of memory") : TERN_OK;
  if (rc == TERN_OK) rc = tern_segid_generate(w->segid);
  w->tim_seed = tern_seg_page_seed(w->segid, SEG_TIM);
  if (rc == TERN_OK) rc = tern_tb_builder_new(&w->tb, o->restart_interval);
  if (rc == TERN_OK) rc = create_file(w, SEG_TIM, &w->tim);
  if (rc == TERN_OK) rc = create_file(w, SEG_DOC, &w->doc);
  if (rc == TERN_OK) rc = create_file(w, SEG_VAL, &w->val);
  if (rc != TERN_OK) {
    writer_free(w);
    return rc;
  }
  *out = w;
  return TERN_OK;
}

/* ------------------------------------------------------------- fields */

static int emit_block(tern_segw *w) {
  uint32_t n = tern_tb_count(w->tb);
  TERN_TRY(tern_tb_finish(w->tb, w->page));
  TERN_TRY(tern_wfile_append_page(w->tim, w->page, w->tim_seed));
  TERN_TRY(tern_terms_index_builder_add(&w->index, w->sep, w->sep_len, n));
  w->nblocks++;
  w->field_blocks++;
  return TERN_OK;
}

/* The field's record: its description, range and terms index. */
static int put_field_record(tern_segw *w) {
  tern_bytebuf *b = &w->fields;
  uint32_t flags = w->flags;
  if ((flags & TERN_FIELD_UNIQUE) && w->doc_ordered) flags |= TERN_FIELD_DOC_ORDERED;
  TERN_TRY(tern_bytebuf_bytes(b, w->fname, w->fname_len));
  TERN_TRY(tern_bytebuf_varint(b, flags));
  TERN_TRY(tern_bytebuf_varint(b, w->threshold));
  TERN_TRY(tern_bytebuf_varint(b, w->nterms));
  TERN_TRY(tern_bytebuf_varint(b, w->pulsed));
  TERN_TRY(tern_bytebuf_varint(b, w->field_blocks));
  if (w->nterms) {
    TERN_TRY(tern_bytebuf_bytes(b, w->min, w->min_len));
    TERN_TRY(tern_bytebuf_bytes(b, w->prev, w->prev_len));
  }
  return tern_terms_index_builder_finish(&w->index, b);
}

static int end_field(tern_segw *w) {
  if (!w->in_field) return TERN_OK;
  if (tern_tb_count(w->tb)) TERN_TRY(emit_block(w));
  TERN_TRY(w->pw->finish(w->pw));
  w->pw->destroy(w->pw);
  w->pw = NULL;
  TERN_TRY(put_field_record(w));
  w->nfields++;
  w->in_field = 0;
  return TERN_OK;
}

static int start_field(tern_segw *w, const void *name, size_t name_len, uint32_t flags,
                       uint32_t threshold) {
  tern_postings_writer *blockw;
  TERN_TRY(tern_block_writer_new(&blockw, w->doc));
  TERN_TRY(tern_pulsing_writer_new(&w->pw, threshold, blockw));
  if (name_len) memcpy(w->fname, name, name_len);
  w->fname_len = name_len;
  w->flags = flags;
  w->threshold = threshold;
  w->tbf.threshold = threshold;
  w->tbf.inline_max = w->o.inline_value_max;
  w->tbf.has_values = (flags & TERN_FIELD_UNIQUE) != 0;
  w->tbf.max_doc = UINT32_MAX;
  tern_tb_builder_start(w->tb, &w->tbf);
  w->nterms = w->pulsed = w->field_blocks = 0;
  w->doc_ordered = 1;
  w->min_len = w->prev_len = w->sep_len = 0;
  tern_terms_index_builder_reset(&w->index);
  if (flags & TERN_FIELD_UNIQUE) w->unique_seen = 1;
  w->in_field = 1;
  return TERN_OK;
}

int tern_segw_field(tern_segw *w, const void *name, size_t name_len, uint32_t flags,
                    uint32_t threshold) {
  if (w->failed) return tern_fail(w->failed, "segment writer: an earlier write failed");
  if (name_len > TERN_FIELD_MAX || (name_len && !name))
    return tern_fail(TERN_EINVAL, "segment writer: field name of %zu bytes", name_len);
  if (flags & ~TERN_FIELD_UNIQUE)
    return tern_fail(TERN_EINVAL, "segment writer: unknown field flags 0x%x", flags);
  if (threshold > TERN_PULSE_MAX)
    return tern_fail(TERN_EINVAL, "segment writer: threshold %u > %u", threshold, TERN_PULSE_MAX);
  if ((flags & TERN_FIELD_UNIQUE) && w->unique_seen)
    return tern_fail(TERN_EINVAL, "segment writer: a second unique field");
  if (w->in_field || w->nfields) {
    if (term_cmp(w->fname, w->fname_len, name, name_len) >= 0)
      return tern_fail(TERN_EINVAL, "segment writer: field names not strictly ascending");
  }
  int rc = end_field(w);
  if (rc == TERN_OK) rc = start_field(w, name, name_len, flags, threshold);
  return rc == TERN_OK ? TERN_OK : poison(w, rc);
}

/* -------------------------------------------------------------- terms */

static int check_term(const tern_segw *w, const void *term, size_t len, const uint32_t *docs,
                      uint32_t ndocs, const void *val, size_t vlen) {
  if (!w->in_field) return tern_fail(TERN_EINVAL, "segment writer: term before any field");
  if (len < 1 || len > TERN_KEY_MAX || !term)
    return tern_fail(TERN_EINVAL, "segment writer: term of %zu bytes (1 to %u)", len, TERN_KEY_MAX);
  if (w->nterms && term_cmp(w->prev, w->prev_len, term, len) >= 0)
    return tern_fail(TERN_EINVAL, "segment writer: terms not strictly ascending");
  if (ndocs < 1 || !docs) return tern_fail(TERN_EINVAL, "segment writer: term without docs");
  for (uint32_t i = 0; i < ndocs; i++) {
    if (docs[i] == TERN_DOC_END || (i && docs[i] <= docs[i - 1]))
      return tern_fail(TERN_EINVAL, "segment writer: doc ids not strictly ascending at %u", i);
  }
  if (w->flags & TERN_FIELD_UNIQUE) {
    if (ndocs != 1)
      return tern_fail(TERN_EINVAL, "segment writer: unique field term with %u docs", ndocs);
    if (vlen > TERN_VALUE_MAX || (vlen && !val))
      return tern_fail(TERN_EINVAL, "segment writer: value of %zu bytes", vlen);
  } else if (val || vlen) {
    return tern_fail(TERN_EINVAL, "segment writer: value for a term of a non-unique field");
  }
  return TERN_OK;
}

static int add_entry(tern_segw *w, const tern_tb_input *in) {
  if (tern_tb_count(w->tb) == 0) {
    w->sep_len = w->field_blocks == 0 && w->nterms == 0
                     ? 0
                     : tern_terms_index_separator(w->prev, w->prev_len, in->term, in->len);
    memcpy(w->sep, in->term, w->sep_len);
  }
  int rc = tern_tb_add(w->tb, in);
  if (rc != 1) return rc;
  TERN_TRY(emit_block(w));
  w->sep_len = tern_terms_index_separator(w->prev, w->prev_len, in->term, in->len);
  memcpy(w->sep, in->term, w->sep_len);
  rc = tern_tb_add(w->tb, in);
  return rc == 1 ? tern_fail(TERN_EINVAL, "segment writer: entry too large for a block") : rc;
}

static int keep_hash(tern_segw *w, const void *term, size_t len) {
  if (w->nhashes == w->hashes_cap) {
    size_t cap = w->hashes_cap ? 2 * w->hashes_cap : 4096;
    uint64_t *h = realloc(w->hashes, cap * sizeof *h);
    if (!h) return tern_fail(TERN_ENOMEM, "segment writer: out of memory");
    w->hashes = h;
    w->hashes_cap = cap;
  }
  w->hashes[w->nhashes++] = tern_filter_hash(term, len);
  return TERN_OK;
}

static int write_term(tern_segw *w, const void *term, size_t len, const uint32_t *docs,
                      uint32_t ndocs, const void *val, size_t vlen) {
  tern_term_meta meta;
  memset(&meta, 0, sizeof meta);
  TERN_TRY(w->pw->write_term(w->pw, docs, ndocs, &meta));
  if (meta.pulsed != (ndocs <= w->threshold) || meta.df != ndocs)
    return tern_fail(TERN_EINVAL, "segment writer: postings writer disagrees with the threshold");
  tern_tb_input in = {.term = term,
                      .len = (uint32_t)len,
                      .df = ndocs,
                      .docs = docs,
                      .post_off = meta.offset,
                      .post_len = meta.length,
                      .vlen = (uint32_t)vlen,
                      .val = val};
  int unique = (w->flags & TERN_FIELD_UNIQUE) != 0;
  if (unique && vlen > w->o.inline_value_max) {
    in.voff = tern_wfile_offset(w->val);
    TERN_TRY(tern_wfile_append(w->val, val, vlen));
  }
  TERN_TRY(add_entry(w, &in));
  if (unique) TERN_TRY(keep_hash(w, term, len));
  return TERN_OK;
}

int tern_segw_term(tern_segw *w, const void *term, size_t len, const uint32_t *docs,
                   uint32_t ndocs, const void *val, size_t vlen) {
  if (w->failed) return tern_fail(w->failed, "segment writer: an earlier write failed");
  TERN_TRY(check_term(w, term, len, docs, ndocs, val, vlen));
  int rc = write_term(w, term, len, docs, ndocs, val, vlen);
  if (rc != TERN_OK) return poison(w, rc);
  if (w->nterms == 0) {
    memcpy(w->min, term, len);
    w->min_len = len;
  }
  if (docs[0] != w->nterms) w->doc_ordered = 0;
  memcpy(w->prev, term, len);
  w->prev_len = len;
  w->nterms++;
  if (ndocs <= w->threshold) w->pulsed++;
  if (!w->any_doc || docs[ndocs - 1] > w->max_doc_seen) w->max_doc_seen = docs[ndocs - 1];
  w->any_doc = 1;
  return TERN_OK;
}

/* ------------------------------------------------------------- finish */

/* Frames and commits a file (freeing it and NULLing *f, whatever
 * happens), keeping its size and the checksums of its pages for the index
 * when they go there. */
static int commit(tern_segw *w, tern_wfile **f, int file, uint64_t *size) {
  int rc = tern_frame_write_footer(*f);
  const uint8_t *sums;
  size_t len;
  if (rc == TERN_OK && sums_in_index(file)) rc = tern_wfile_page_sums(*f, &sums, &len);
  if (rc == TERN_OK && sums_in_index(file)) rc = tern_bytebuf_put(&w->sums, sums, len);
  if (size) *size = tern_wfile_offset(*f);
  if (rc == TERN_OK)
    rc = tern_wfile_commit(*f);
  else
    tern_wfile_abort(*f);
  *f = NULL;
  return rc;
}

static int write_framed(tern_segw *w, int file, const void *body, size_t len) {
  tern_wfile *f;
  TERN_TRY(create_file(w, file, &f));
  int rc = len ? tern_wfile_append(f, body, len) : TERN_OK;
  if (rc == TERN_OK) return commit(w, &f, file, NULL);
  tern_wfile_abort(f);
  return rc;
}

static int write_index(tern_segw *w, uint32_t max_doc) {
  tern_bytebuf b = {0};
  int rc = tern_bytebuf_varint(&b, max_doc);
  if (rc == TERN_OK) rc = tern_bytebuf_varint(&b, w->o.inline_value_max);
  if (rc == TERN_OK) rc = tern_bytebuf_varint(&b, w->o.bloom_bits_per_key);
  if (rc == TERN_OK) rc = tern_bytebuf_varint(&b, w->nfields);
  if (rc == TERN_OK) rc = tern_bytebuf_varint(&b, w->nblocks);
  if (rc == TERN_OK) rc = tern_bytebuf_varint(&b, w->doc_size);
  if (rc == TERN_OK) rc = tern_bytebuf_varint(&b, w->val_size);
  if (rc == TERN_OK) rc = tern_bytebuf_varint(&b, w->flt_size);
  if (rc == TERN_OK) rc = tern_bytebuf_put(&b, w->fields.p, w->fields.len);
  if (rc == TERN_OK) rc = tern_bytebuf_put(&b, w->sums.p, w->sums.len);
  if (rc == TERN_OK) rc = write_framed(w, SEG_TIX, b.p, b.len);
  tern_bytebuf_free(&b);
  return rc;
}

/* NAME.flt, with page checksums like the data files (its pages are
 * checked when first probed): committed after them, its sums last. */
static int write_filter(tern_segw *w) {
  uint8_t *body = NULL;
  size_t len = 0;
  if (w->unique_seen && w->o.bloom_bits_per_key && w->nhashes) {
    len = tern_filter_body_size(w->nhashes, w->o.bloom_bits_per_key);
    if (len == 0) return tern_fail(TERN_EINVAL, "segment writer: filter too large");
    if (!(body = calloc(1, len)))
      return tern_fail(TERN_ENOMEM, "segment writer: out of memory for the filter");
  }
  int rc = body ? tern_filter_build(body, len, w->hashes, w->nhashes, w->o.bloom_bits_per_key)
                : TERN_OK;
  tern_wfile *f = NULL;
  if (rc == TERN_OK) rc = create_file(w, SEG_FLT, &f);
  if (rc == TERN_OK && len) rc = tern_wfile_append(f, body, len);
  free(body);
  if (rc == TERN_OK) rc = commit(w, &f, SEG_FLT, &w->flt_size); /* NULLs f */
  tern_wfile_abort(f);
  return rc;
}

static int finish_files(tern_segw *w, uint32_t max_doc) {
  TERN_TRY(end_field(w));
  if (w->any_doc && w->max_doc_seen >= max_doc)
    return tern_fail(TERN_EINVAL, "segment writer: doc %u not below max_doc %u", w->max_doc_seen,
                     max_doc);
  TERN_TRY(commit(w, &w->tim, SEG_TIM, NULL));
  TERN_TRY(commit(w, &w->doc, SEG_DOC, &w->doc_size));
  TERN_TRY(commit(w, &w->val, SEG_VAL, &w->val_size));
  TERN_TRY(write_filter(w));
  /* The index last: a segment whose .tix exists has all its files. */
  TERN_TRY(write_index(w, max_doc));
  return tern_fsync_dir(w->dir);
}

int tern_segw_finish(tern_segw *w, uint32_t max_doc) {
  int rc = w->failed ? tern_fail(w->failed, "segment writer: an earlier write failed")
                     : finish_files(w, max_doc);
  if (rc != TERN_OK) {
    /* Keep the message of the failure, not of the cleanup. */
    tern_wfile_abort(w->tim);
    tern_wfile_abort(w->doc);
    tern_wfile_abort(w->val);
    w->tim = w->doc = w->val = NULL;
    (void)tern_seg_remove(w->dir, w->name);
  }
  writer_free(w);
  return rc;
}

void tern_segw_abort(tern_segw *w) {
  /* Only temporary files exist before finish; freeing removes them. */
  if (w) writer_free(w);
}
