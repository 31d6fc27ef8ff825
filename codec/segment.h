/* SPDX-License-Identifier: MIT */
/*
 * segment.h — one immutable segment: for each field, its terms in a
 * prefix-compressed block dictionary with a resident terms index, their
 * postings (pulsed into the entry, or in the postings file), and for the
 * unique (primary-key) field each key's value, a membership filter and the
 * key range.  Files of segment NAME in DIR (docs/FORMAT.md):
 *
 *   NAME.tim  terms blocks, each in its own 4 KiB page
 *   NAME.tix  field table and terms index (read and verified at open)
 *   NAME.doc  postings of terms above their field's pulsing threshold
 *   NAME.flt  membership filter of the unique field (probed in place, each
 *             page checked on first use: codec/segment_filter.c)
 *   NAME.val  values longer than the inline limit
 *
 * A segment knows nothing of other segments, deletions or time.
 * Readers are thread-safe; each thread brings its own tern_seg_cursor.
 */
#ifndef TERN_SEGMENT_H
#define TERN_SEGMENT_H

/* The default inline value limit, chosen by measurement (docs/BENCHMARKS.md,
 * "Inline limit"): a value up to 128 bytes read cold costs one read, not
 * two, and no more bytes on disk than in .val. */
#define TERN_SEG_INLINE_DEFAULT 128u

#include "codec/filter.h"
#include "codec/io.h"
#include "codec/postings.h"
#include "codec/read_ahead.h"
#include "codec/terms_block.h"
#include "codec/terms_index.h"
#include "tern.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TERN_FIELD_UNIQUE 0x1u  /* the primary-key field: one doc per term, a value per term */
#define TERN_BLOCK_SIZE 4096u   /* a terms block: one page */

/* ---------------------------------------------------------------- writing */

typedef struct tern_segw_options {
  uint32_t inline_value_max;   /* values up to this many bytes sit in the entry (128) */
  uint32_t bloom_bits_per_key; /* filter bits per unique key (10; 0 = no filter) */
  uint32_t restart_interval;   /* terms block restart interval, 1 to 255 (TERN_TB_RESTART) */
} tern_segw_options;
void tern_segw_options_init(tern_segw_options *o);

typedef struct tern_segw tern_segw;

/* Starts writing segment `name` in `dir` (temporary files until finish). */
int tern_segw_open(tern_segw **out, const char *dir, const char *name, const tern_segw_options *o);
/* Starts the next field.  Names are 0 to 255 bytes, strictly ascending in
 * byte order; at most one field is TERN_FIELD_UNIQUE.  threshold: pulsing
 * threshold, 0 to TERN_PULSE_MAX. */
int tern_segw_field(tern_segw *w, const void *name, size_t name_len, uint32_t flags,
                    uint32_t threshold);
/* Adds a term of the current field: 1 to TERN_KEY_MAX bytes, strictly
 * ascending; docs strictly ascending.  Unique field: exactly one doc and a
 * value (vlen may be 0, at most TERN_VALUE_MAX); other fields: val NULL. */
int tern_segw_term(tern_segw *w, const void *term, size_t len, const uint32_t *docs,
                   uint32_t ndocs, const void *val, size_t vlen);
/* The 16-byte id of the segment being written (in every file's header). */
const uint8_t *tern_segw_id(const tern_segw *w);
/* Writes the remaining files, fsyncs them and the directory, and frees w.
 * max_doc: doc ids are < max_doc.  On failure the files are removed. */
int tern_segw_finish(tern_segw *w, uint32_t max_doc);
/* Drops everything written and frees w.  NULL is fine. */
void tern_segw_abort(tern_segw *w);

/* Removes every file of segment `name` (temporary ones too); absent files
 * are fine. */
int tern_seg_remove(const char *dir, const char *name);
/* Starts reading what opening segment `name` reads (NAME.tix), without
 * waiting: a hint for a process about to open it.  Returns NAME.tix's
 * size, 0 when it could not be asked for. */
uint64_t tern_seg_prefetch(const char *dir, const char *name);
/* Readies the buffer that opening segment `name` in pread mode reads its
 * `tix_size` bytes of NAME.tix into, its pages faulted in now
 * (spare_buf.h): for a process that has asked for the file and waits on
 * other reads.  A mapped open uses the file in place and takes none. */
void tern_seg_ready_index_buffer(const char *dir, const char *name, uint64_t tix_size);
/* A copy of file `from` as the new file `to` (O_EXCL), fsynced: where a
 * hard link cannot be made (another file system).  -errno naming the file. */
int tern_file_copy(const char *from, const char *to);
/* Links (same file system) or else copies and fsyncs every file of
 * segment from_dir/from_name as segment to_dir/to_name (files it lacks
 * are skipped; the source is left as it is).  The caller fsyncs to_dir.
 * On failure the files made are removed.  -errno naming the file. */
int tern_seg_link(const char *from_dir, const char *from_name, const char *to_dir,
                  const char *to_name);
/* 1 when `filename` (no directory) is a file of some segment, with its
 * segment name copied into name[cap]; 0 otherwise. */
int tern_seg_file_segment(const char *filename, char *name, size_t cap);

/* ---------------------------------------------------------------- reading */

typedef struct tern_seg tern_seg;
typedef struct tern_seg_field tern_seg_field;

/* Opens segment `name`: reads and verifies NAME.tix, maps NAME.flt (its
 * pages checked on first use), opens the other files (checking their
 * headers).  TERN_ECORRUPT / TERN_EVERSION /
 * -errno with the file named. */
int tern_seg_open(tern_seg **out, const char *dir, const char *name, tern_io_mode mode);
void tern_seg_close(tern_seg *s);

uint32_t tern_seg_max_doc(const tern_seg *s);
const uint8_t *tern_seg_id(const tern_seg *s); /* TERN_SEGID_SIZE bytes */
size_t tern_seg_nfields(const tern_seg *s);
const tern_seg_field *tern_seg_field_at(const tern_seg *s, size_t i);
/* The field named so, or NULL. */
const tern_seg_field *tern_seg_find_field(const tern_seg *s, const void *name, size_t len);
/* The unique field, or NULL. */
const tern_seg_field *tern_seg_unique_field(const tern_seg *s);

typedef struct tern_field_info {
  const uint8_t *name;
  size_t name_len;
  uint32_t flags, threshold;
  uint64_t nterms, pulsed_terms;
  const uint8_t *min_term, *max_term; /* NULL when the field has no terms */
  size_t min_len, max_len;
} tern_field_info;
void tern_seg_field_info(const tern_seg_field *f, tern_field_info *out);

/* Per-thread scratch of lookups: results point into it and stay valid
 * until its next use.  Keeps the last block it read, so lookups in key
 * order (batch get) read each block once.  Fields are private. */
typedef struct tern_seg_cursor {
  const tern_seg *seg;
  const tern_seg_field *field;
  int64_t block_no;              /* block held in `page`, -1 none */
  const uint8_t *block;          /* the block's bytes (mapping or page) */
  uint64_t ra_until;             /* private: a scan asked the kernel for blocks below this */
  uint64_t ra_down;              /* private: a reverse scan asked for blocks from this - 1 up (0: none) */
  tern_ahead val_ahead;           /* private: values read from NAME.val (value_from_file) */
  tern_tb_pairs *pairs;          /* stepping: the pair decode table (use_pairs), or NULL */
  uint32_t block_steps;          /* steps taken in the block held */
  uint32_t plain_steps;          /* steps decoded without the pair table since it was built */
  tern_tb_keys *keys;            /* stepping: terms decoded ahead (next_term), or NULL */
  uint32_t keys_want;            /* entries the next batch decodes (grows as a scan goes on;
                                  * 0 after a positioning: keys_first) */
  uint32_t keys_first;           /* the first batch after a positioning (tern_seg_cursor_expect) */
  int keys_on;                   /* the key side of `it` and `term` stand past `keys` */
  /* private: entries keyed_first .. keyed_first + keyed_n - 1 are in `keys`
   * with their tails and the cursor stands in that batch (keys_on,
   * positioned, keys->tails): what tern_seg_next_keyed tests, in one
   * comparison; keyed_n is 0 whenever any of those does not hold */
  uint32_t keyed_first, keyed_n;
  /* private, with keyed_n: the field has values, and the entry stood on
   * one of keyed_vlen bytes, at bit vbit of the block (whole bytes of it
   * when vbit is divisible by 8), or in NAME.val when vbit is 0 */
  int keyed_values;
  uint32_t keyed_vlen;
  uint8_t page[TERN_BLOCK_SIZE]; /* pread mode: the block */
  uint8_t term[TERN_KEY_MAX];    /* the decoded term */
  uint32_t entry;                /* entry index in the block of the last result */
  uint64_t bitpos;               /* private decoding state */
  uint8_t *value;                /* external values and inline copies */
  size_t value_cap;
  /* private: */
  uint64_t seg_uid;              /* the open segment `block` belongs to */
  uint64_t field_block;          /* block_no within its field */
  uint64_t block_ord;            /* ordinal of its first entry */
  int positioned;                /* `it` follows the last result */
  tern_tb_block blk;             /* the block's decoded header */
  tern_tb_iter it;               /* decoding position after the last result */
  uint8_t vbuf[TERN_INLINE_MAX]; /* the last result's inline value, when copied */
  uint32_t vbit;                 /* private: that value's bit position in blk */
} tern_seg_cursor;
void tern_seg_cursor_init(tern_seg_cursor *c);
void tern_seg_cursor_release(tern_seg_cursor *c);
/* The rank in its field of c's last result (of a positioning or a step),
 * in *ord: 1, or 0 when c holds no result to step from. */
static inline int tern_seg_cursor_ordinal(const tern_seg_cursor *c, uint64_t *ord) {
  *ord = c->block_ord + c->entry;
  return c->positioned;
}
/* A hint, no effect on what is read: the caller expects about `steps`
 * forward steps after each of c's next positionings (a short range read
 * after every seek), so the first batch of terms decoded ahead after one
 * holds that many, clamped to [4, TERN_TB_KEYS_MAX], and the second as
 * many again (a run a little longer than expected decodes twice, not
 * three times, the first), doubling from there; steps 4 or fewer (0: no
 * hint) give batches of 4, 8, 16 ... */
void tern_seg_cursor_expect(tern_seg_cursor *c, uint64_t steps);
/* Whether c holds memory of its own, which tern_seg_cursor_release frees:
 * a cursor that ends its life holding none needs no release (a get's, on
 * the stack, mostly holds none). */
static inline int tern_seg_cursor_holds(const tern_seg_cursor *c) {
  return c->pairs || c->keys || c->value;
}

/* A term as found in the dictionary. */
typedef struct tern_term_entry {
  const uint8_t *term; /* in the cursor */
  size_t len;
  uint64_t ordinal;    /* rank of the term in its field */
  tern_term_meta meta; /* postings: inlined docs point into `docs` */
  uint32_t docs[TERN_PULSE_MAX];
  uint32_t value_len;  /* unique field */
  int value_inline;    /* 1: value bytes are in the entry */
  uint64_t value_off;  /* 0: offset of the value in NAME.val */
} tern_term_entry;

/* Finds `term` exactly: reads at most one terms block.  TERN_NOTFOUND when
 * absent.  Does not consult the filter (a primary key is looked up with
 * the gate and tern_seg_pk_find, below). */
int tern_seg_seek_exact(const tern_seg *s, const tern_seg_field *f, const void *term, size_t len,
                        tern_seg_cursor *c, tern_term_entry *e);
/* Finds the first term >= `term`; TERN_NOTFOUND when there is none. */
int tern_seg_seek_ceil(const tern_seg *s, const tern_seg_field *f, const void *term, size_t len,
                       tern_seg_cursor *c, tern_term_entry *e);
/* The field's first term, then each next one in order; TERN_NOTFOUND after
 * the last.  next_term continues from the cursor's last result. */
int tern_seg_first_term(const tern_seg *s, const tern_seg_field *f, tern_seg_cursor *c,
                        tern_term_entry *e);
int tern_seg_next_term(const tern_seg *s, tern_seg_cursor *c, tern_term_entry *e);

/* The step most of a scan takes, for a caller that needs the term at each
 * step and the value only when it asks: when c's next entry was decoded
 * ahead with its tail (tern_tb_keys.tails: a block whose every entry has
 * one doc and an inline value — a primary key's), moves c
 * onto it, points *term / *len at its term and returns 1; else returns 0
 * having moved nothing, and the caller calls tern_seg_next_term.  No
 * tern_term_entry is filled (the fill is most of tern_seg_next_term's own
 * work): that entry's value is tern_seg_keyed_value's, and a caller that
 * needs anything else of it steps with tern_seg_next_term.  c must be
 * stepping in s, which the caller keeps open (its last result came from
 * s); inline, so that the step is no call. */
static inline int tern_seg_next_keyed(const tern_seg *s, tern_seg_cursor *c,
                                      const uint8_t **term, size_t *len) {
  uint32_t index = c->it.entry, j = index - c->keyed_first;
  if (j >= c->keyed_n || c->seg != s) return 0;
  const tern_tb_keys *k = c->keys; /* keyed_n: keys_on, positioned and k->tails hold */
  tern_tb_keys_skip_tail(k, j, &c->it);
  c->entry = index;
  c->vbit = tern_tb_keys_vbit(k, j);
  c->keyed_vlen = tern_tb_keys_vlen(k, j);
  *term = k->bytes + k->off[j];
  *len = k->len[j];
  return 1;
}
/* Whether c's last step (tern_seg_next_term's too) took its entry from a
 * batch decoded with its tails, as tern_seg_next_keyed does: then
 * tern_seg_keyed_value gives its value, as tern_seg_value would from the
 * entry. */
static inline int tern_seg_stepped_keyed(const tern_seg_cursor *c) { return c->keyed_n != 0; }
/* The value of the entry tern_seg_next_keyed stepped to, as tern_seg_value
 * gives it for the entry tern_seg_next_term fills; valid as long.  Inline
 * (tern_seg_keyed_value_fast) for a value that is whole bytes of the block
 * — a pointer into it, checked when it was read — or short; else out of
 * line, a copy or a read of NAME.val. */
int tern_seg_keyed_value_copy(const tern_seg *s, tern_seg_cursor *c, tern_slice *value);
/* tern_seg_keyed_value's inline cases alone: 1 with *value set, else 0
 * (nothing done).  A value off the block's byte boundaries (its tail's
 * lengths vary, or the tails are no whole bytes wide) of at most
 * TERN_SEG_SHORT_VALUE bytes — most primary keys' values, when they vary
 * — is shifted into c's buffer 7 bytes a read (each 8-byte store's last
 * byte is the next one's first, or past the value). */
#define TERN_SEG_SHORT_VALUE 64u
_Static_assert(TERN_INLINE_MAX >= TERN_SEG_SHORT_VALUE + 7, "vbuf holds a short value's stores");
static inline int tern_seg_keyed_value_fast(tern_seg_cursor *c, tern_slice *value) {
  uint32_t at = c->vbit >> 3, shift = c->vbit & 7, n = c->keyed_vlen;
  if (!c->keyed_values || c->vbit == 0) return 0; /* none, or in NAME.val */
  value->len = n;
  if (shift == 0) {
    value->data = c->blk.page + at;
    return 1;
  }
  if (n > TERN_SEG_SHORT_VALUE || at + n + 7 > TERN_TB_PAGE) return 0;
  for (uint32_t i = 0; i < n; i += 7) {
    uint64_t v = tern_bits_le64(c->blk.page + at + i) >> shift;
    for (unsigned q = 0; q < 8; q++) c->vbuf[i + q] = (uint8_t)(v >> (8 * q));
  }
  value->data = c->vbuf;
  return 1;
}
static inline int tern_seg_keyed_value(const tern_seg *s, tern_seg_cursor *c, tern_slice *value) {
  if (tern_seg_keyed_value_fast(c, value)) return TERN_OK;
  return tern_seg_keyed_value_copy(s, c, value);
}

/* The value of a unique-field entry: in the entry, or one read of NAME.val.
 * e must be c's last result: an inline value is taken from c's block only
 * now (a scan that never asks for values never decodes one), in place when
 * its bytes are whole bytes of the block, else copied into c; either way
 * valid until c's next use. */
int tern_seg_value(const tern_seg *s, const tern_term_entry *e, tern_seg_cursor *c,
                   tern_slice *value);
/* Starts iterating an entry's postings (no read when pulsed, else one). */
int tern_seg_postings(const tern_seg *s, const tern_term_entry *e, tern_postings_iter *it);

/* ------------------------------------------------ primary-key lookup
 *
 * The one primary-key lookup, in two steps that every caller takes:
 *
 *   1. the gate, resident, no I/O: tern_seg_gate_start (the key against
 *      the segment's [min, max] by 8-byte heads; in range, the fetch of
 *      the filter line started), then tern_seg_gate_filter (the filter's
 *      answer).  tern_seg_gate_pass is both, for a caller testing one
 *      segment; a caller testing many starts every segment's gate first,
 *      so that the filter lines' cache misses overlap, then asks the
 *      filters (engine/state.c).
 *   2. tern_seg_pk_find: the terms index, one block, the doc id.
 *
 * A cold batch asks, after the gate, which block step 2 would read
 * (tern_seg_pk_block), reads the blocks of many keys through a read queue
 * and hands each to the cursor (tern_seg_cursor_adopt): step 2 then reads
 * nothing. */

/* A primary key prepared once for looking it up in many segments: its
 * 8-byte head and its filter probe (hash and bit masks), computed once per
 * get.  Fields are read-only to callers. */
typedef struct tern_seg_probe {
  const uint8_t *key;
  size_t len;
  uint64_t head;
  tern_filter_key fk; /* fk.hash: tern_filter_hash(key, len) */
} tern_seg_probe;
/* TERN_EINVAL unless key is 1 to TERN_KEY_MAX bytes. */
int tern_seg_probe_init(tern_seg_probe *p, const void *key, size_t len);
/* tern_seg_probe_init in two steps, for a caller that searches by the
 * head while the hash is computed (the engine's range map): the key and
 * its head (TERN_EINVAL as above; fk not set), then the filter probe. */
int tern_seg_probe_head(tern_seg_probe *p, const void *key, size_t len);
void tern_seg_probe_hash(tern_seg_probe *p);

/* What a lookup tests of a segment before searching it, all resident: the
 * heads of its unique field's first and last keys and its filter.  A
 * caller probing many segments keeps one gate per segment in one array and
 * tests them inline: every segment's range first, starting the fetch of
 * its filter line (the lines' cache misses then overlap), then the
 * filters and tern_seg_pk_find newest first.  Valid while s is open. */
typedef struct tern_seg_gate {
  uint64_t lo, hi; /* heads of min and max; lo > hi: no unique key at all */
  const uint8_t *min, *max;
  uint32_t min_len, max_len;
  tern_filter_view filter;
  const tern_seg *seg;
} tern_seg_gate;
void tern_seg_gate_of(const tern_seg *s, tern_seg_gate *g);
/* Byte order of terms (a shorter term first on a common prefix). */
static inline int tern_seg_term_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  return c ? c : (alen > blen) - (alen < blen);
}
/* 0 when the key is outside the segment's [min, max] (the heads decide but
 * for ties); else 1.  gate_start also starts the filter line's fetch (a
 * caller that fetched it already, by tern_seg_filter_line_block, admits
 * only).  No I/O. */
static inline int tern_seg_gate_admits(const tern_seg_gate *g, const tern_seg_probe *p) {
  if (p->head < g->lo || p->head > g->hi) return 0;
  if (p->head == g->lo && tern_seg_term_cmp(p->key, p->len, g->min, g->min_len) < 0) return 0;
  if (p->head == g->hi && tern_seg_term_cmp(p->key, p->len, g->max, g->max_len) > 0) return 0;
  return 1;
}
static inline int tern_seg_gate_start(const tern_seg_gate *g, const tern_seg_probe *p) {
  if (!tern_seg_gate_admits(g, p)) return 0;
  tern_filter_view_prefetch(g->filter, p->fk.hash);
  return 1;
}
/* tern_seg_gate_filter's answers: TERN_SEG_FILTER_NO (certainly absent),
 * _MAYBE, or _SKIPPED when the page the probe needs is neither checked by
 * this process nor known to be in the page cache (reading it would cost
 * the I/O the terms block costs anyway: the block decides); < 0: the page
 * is damaged. */
enum { TERN_SEG_FILTER_NO = 0, TERN_SEG_FILTER_MAYBE = 1, TERN_SEG_FILTER_SKIPPED = 2 };
/* A key found absent by a block read after the probe was skipped: the
 * filter's page would have saved that read, so it is asked for in the
 * background, and later probes use it once it is cached. */
void tern_seg_filter_missed(const tern_seg *s, uint64_t hash);
/* The filter's answer, once gate_start let the key in: 0 when the key is
 * certainly not in the segment; > 0 when the block must decide (pass it on
 * to tern_seg_pk_find); < 0 a damaged filter page (TERN_ECORRUPT naming
 * NAME.flt).  A filter page this process has not checked yet is not used
 * (segment_filter.c): no I/O, and an unchecked page is never trusted. */
int tern_seg_gate_filter(const tern_seg_gate *g, const tern_seg_probe *p);
/* A segment's filter as a get over many segments keeps it beside the
 * segment's key range (the engine's range map, engine/state/state_ranges.c): an
 * absent key is then answered from the entry, the filter's line and the
 * word of the .flt file's checked-pages bitmap, fetched together, instead
 * of following the segment's own state (its tern_seg, filter and file) one
 * load after the other.  Valid while s is open.  Only a page this process
 * has checked is used, as tern_seg_gate_filter does. */
typedef struct tern_seg_filter_line {
  const uint8_t *blocks;           /* NULL: undecided here */
  const _Atomic uint64_t *checked; /* .flt's checked pages; NULL: undecided here */
  const _Atomic uint64_t *asked;   /* .flt's pages asked for (segment_filter.c); NULL: unknown */
  /* Nonzero once any page of .flt was checked (tern_rfile_checked_any), or
   * asked for; NULL with checked, asked */
  const _Atomic uint64_t *checked_any, *asked_any;
  uint32_t nblocks, base;          /* base: file offset of block 0 */
  uint32_t settled;                /* 1: every page of the blocks checked (no bitmap read) */
  uint64_t npages;
} tern_seg_filter_line;
void tern_seg_filter_line_of(const tern_seg *s, tern_seg_filter_line *l);
/* Sets l->settled when every page holding the filter's blocks has been
 * checked by this process; with check_cached, first checks the pages not
 * checked yet that are in the page cache (no I/O: tern_rfile_check_cached).
 * A page not cached, or damaged, leaves the line unsettled (the bitmap
 * then decides per page, and a get meets the damage as before). */
void tern_seg_filter_line_settle(const tern_seg *s, tern_seg_filter_line *l, int check_cached);
/* The block's address and its page's bitmap word for `hash`; NULL when
 * the line decides nothing (callers prefetch both, then ask below). */
static inline const uint8_t *tern_seg_filter_line_block(const tern_seg_filter_line *l,
                                                        uint64_t hash, uint64_t *page) {
  if (!l->blocks || !l->checked) return NULL;
  uint64_t b = ((hash >> 32) * l->nblocks) >> 32;
  *page = (l->base + b * TERN_FILTER_BLOCK_SIZE) / TERN_IO_PAGE;
  return *page < l->npages ? l->blocks + b * TERN_FILTER_BLOCK_SIZE : NULL;
}
/* The line's answer: 0 when the filter says the key is certainly absent,
 * 1 when it may be present (exactly what tern_seg_gate_filter answers for
 * a checked page), -1 when the line cannot tell (its page unchecked by
 * this process, or no filter in place): then tern_seg_gate_filter
 * decides, exactly as without the line. */
static inline int tern_seg_filter_line_test(const tern_seg_filter_line *l,
                                            const tern_filter_key *k) {
  uint64_t page;
  const uint8_t *b = tern_seg_filter_line_block(l, k->hash, &page);
  if (!b) return -1;
  if (!l->settled) {
    uint64_t w = atomic_load_explicit(&l->checked[page / 64], memory_order_acquire);
    if (!((w >> (page % 64)) & 1)) return -1;
  }
  return tern_filter_block_has(b, k);
}
/* tern_seg_gate_filter's own answer when the line can give it without the
 * segment: as tern_seg_filter_line_test, and for a page this process has
 * neither checked nor asked for, TERN_SEG_FILTER_SKIPPED (what the gate
 * answers then: the block decides, and a miss asks for the page); -1 when
 * only the gate can tell (a page asked for: it checks whether the page
 * has arrived).  A present key on a filter whose pages were never needed
 * (a warm index read by present keys) then costs the line's two bitmap
 * words, not the call.  In two steps for a caller that makes the key's
 * bit masks only when a block is tested (tern_filter_key_init):
 * tern_seg_filter_line_ready gives the block to test (its page checked),
 * or NULL and the answer (TERN_SEG_FILTER_SKIPPED, or -1: the gate). */
static inline const uint8_t *tern_seg_filter_line_decide(const tern_seg_filter_line *l,
                                                         const uint8_t *b, uint64_t page,
                                                         int *answer);
static inline const uint8_t *tern_seg_filter_line_ready(const tern_seg_filter_line *l,
                                                        uint64_t hash, int *answer) {
  uint64_t page = 0;
  const uint8_t *b = tern_seg_filter_line_block(l, hash, &page);
  return tern_seg_filter_line_decide(l, b, page, answer);
}
/* The same from the block and page tern_seg_filter_line_block gave (a
 * caller that fetched them first computes them once). */
static inline const uint8_t *tern_seg_filter_line_decide(const tern_seg_filter_line *l,
                                                         const uint8_t *b, uint64_t page,
                                                         int *answer) {
  *answer = -1;
  if (!b || l->settled) return b;
  uint64_t w = atomic_load_explicit(&l->checked[page / 64], memory_order_acquire);
  if ((w >> (page % 64)) & 1) return b;
  if (l->asked) {
    uint64_t a = atomic_load_explicit(&l->asked[page / 64], memory_order_relaxed);
    if (!((a >> (page % 64)) & 1)) *answer = TERN_SEG_FILTER_SKIPPED;
  }
  return NULL;
}
static inline int tern_seg_filter_line_gate(const tern_seg_filter_line *l,
                                            const tern_filter_key *k) {
  int answer;
  const uint8_t *b = tern_seg_filter_line_ready(l, k->hash, &answer);
  return b ? tern_filter_block_has(b, k) : answer;
}
/* 1 when every key's answer from the line is TERN_SEG_FILTER_SKIPPED
 * whatever its hash: no page of the filter checked nor asked for yet (a
 * warm index read by present keys only never needs one).  A caller may
 * then skip the key's hash, and call tern_seg_filter_missed itself once
 * the block finds the key absent (tern_seg_pk_find with
 * TERN_SEG_FILTER_MAYBE, which asks for nothing).  A page checked or
 * asked for meanwhile only makes this one probe skip it, as "skipped"
 * always may. */
static inline int tern_seg_filter_line_idle(const tern_seg_filter_line *l) {
  return l->blocks && l->asked && !l->settled &&
         !atomic_load_explicit(l->checked_any, memory_order_relaxed) &&
         !atomic_load_explicit(l->asked_any, memory_order_relaxed);
}
/* 1 when the line says the key is certainly absent, else 0. */
static inline int tern_seg_filter_line_absent(const tern_seg_filter_line *l,
                                              const tern_filter_key *k) {
  return tern_seg_filter_line_test(l, k) == 0;
}
/* The whole gate of one segment: 0 outside its range, else the filter's
 * answer (as tern_seg_gate_filter). */
static inline int tern_seg_gate_pass(const tern_seg_gate *g, const tern_seg_probe *p) {
  return tern_seg_gate_start(g, p) ? tern_seg_gate_filter(g, p) : 0;
}
/* The primary-key lookup, once the gate let the key through with `filter`
 * (> 0, tern_seg_gate_filter's answer): the resident terms index names the
 * one block, the block is searched (read unless the cursor holds it), and
 * the key's doc id taken from its entry (pulsed) or from NAME.doc (one
 * read).  TERN_OK with the entry in c/e (for tern_seg_value) and the doc
 * id, < max_doc, in *doc; TERN_NOTFOUND when absent (after a skipped
 * filter page, its page is then asked for: segment_filter.c);
 * TERN_ECORRUPT naming the file.  The segment knows nothing of deletions:
 * whether the doc is live is the caller's question. */
int tern_seg_pk_find(const tern_seg *s, const tern_seg_probe *p, int filter, tern_seg_cursor *c,
                     tern_term_entry *e, uint32_t *doc);
/* Cold batches (the engine's tern_get_batch reads the blocks of many keys
 * through a read queue, tern_rqueue, then resolves each key in its block).
 * The terms block tern_seg_pk_find would read for the probe's key, once
 * the gate let it through: its number in NAME.tim (global, all fields)
 * and its ordinals (for tern_seg_cursor_adopt), TERN_OK; or TERN_NOTFOUND
 * (no unique key).  No I/O.  Keys come in ascending order through `walk`
 * (tern_terms_index_walk_init'ed for this segment): a terms-index group
 * no thread decoded yet is walked, not decoded (terms_index.h). */
int tern_seg_pk_block(const tern_seg *s, const tern_seg_probe *p, tern_ti_walk *walk,
                      uint64_t *gb, tern_ti_block *info);
/* tern_seg_pk_find in block gb, the one tern_seg_pk_block named for the
 * probe's key (the terms index not asked again): no I/O when the cursor
 * holds it (tern_seg_cursor_adopt).  TERN_EINVAL when gb is not a block
 * of the unique field. */
int tern_seg_pk_find_in(const tern_seg *s, const tern_seg_probe *p, int filter, uint64_t gb,
                        tern_seg_cursor *c, tern_term_entry *e, uint32_t *doc);
/* The terms file, and where block gb sits in it (a whole page). */
tern_rfile *tern_seg_terms_file(const tern_seg *s);
static inline uint64_t tern_seg_block_offset(uint64_t gb) { return (uint64_t)TERN_BLOCK_SIZE * (gb + 1); }
/* Blocks of the terms file (all fields). */
uint64_t tern_seg_nblocks(const tern_seg *s);
/* Makes unique-field block gb, whose bytes `page` a read queue read and
 * checked, the cursor's block (copied): a lookup whose key the index sends
 * to it then reads nothing.  info: the block's ordinals as
 * tern_seg_pk_block gave them.  Its decoded header is not kept for the
 * block's later opens (a block read cold may not be read again: the next
 * warm open keeps it).  TERN_ECORRUPT when the block is damaged. */
int tern_seg_cursor_adopt(const tern_seg *s, uint64_t gb, const tern_ti_block *info,
                          const uint8_t *page, tern_seg_cursor *c);

/* The value of a unique-field entry when it needs a read: 1 with its place
 * in NAME.val (*off, *len), whose pages this process has not all checked
 * yet (a batch reads it through its queue, then copies it out); 0 when
 * tern_seg_value gives it without waiting for storage (inline, or its
 * pages checked); TERN_ECORRUPT when it lies outside the file. */
int tern_seg_value_span(const tern_seg *s, const tern_term_entry *e, uint64_t *off, uint32_t *len);
tern_rfile *tern_seg_values_file(const tern_seg *s);

/* The key and value of document `doc`, when the unique field's doc ids are
 * its term ordinals (segments the engine writes).  TERN_EINVAL otherwise. */
int tern_seg_doc(const tern_seg *s, uint32_t doc, tern_seg_cursor *c, tern_slice *key,
                 tern_slice *value);

/* segment_sample.c.  The field's terms blocks as its resident terms index
 * knows them, without I/O: how many there are, and block b's separator
 * (every term of blocks >= b sorts at or above it, every term of the
 * blocks before below it; block 0's is empty, pointing into the index:
 * valid while s is open) and its number of entries.  For sampling the
 * key space (tern_split_keys). */
uint64_t tern_seg_field_nblocks(const tern_seg_field *f);
int tern_seg_field_block(const tern_seg_field *f, uint64_t b, const uint8_t **sep, size_t *len,
                         uint32_t *entries);

/* Full check: every file's checksum, every block decoded, terms ascending,
 * counts and postings consistent.  TERN_ECORRUPT naming the file. */
int tern_seg_verify(const tern_seg *s);

typedef struct tern_seg_summary {
  uint64_t terms, pulsed_terms;
  uint64_t bytes_terms, bytes_index, bytes_postings, bytes_filter, bytes_values, bytes;
} tern_seg_summary;
void tern_seg_summarize(const tern_seg *s, tern_seg_summary *out);
/* 1 when the segment is mapped and its terms file is (almost) all in the
 * page cache: lookups in any order then cost no read (segment_resident.c),
 * asked for `keys` lookups.  The answer of a whole check (a byte and a
 * page-table entry per page) is kept for TERN_SEG_RESIDENT_KEPT keys a
 * page of the file, the next callers' keys taken from it without asking
 * again.
 * Without one, 0 without asking unless these keys and those of the callers
 * not asked for since have paid for a whole check at pages_per_key pages a
 * key (UINT64_MAX: ask now); a "no" that a few pages spread over the file
 * gave is not kept. */
#define TERN_SEG_RESIDENT_KEPT 16u
int tern_seg_terms_resident(const tern_seg *s, uint64_t keys, uint64_t pages_per_key);

/* Counted reads, per file kind of this segment (terms/postings/values). */
typedef struct tern_seg_io {
  tern_io_stats terms, postings, values;
  /* filter pages checked by probes: never read from storage (a probe whose
   * page is not cached is skipped), so not in the global read counts */
  tern_io_stats filter;
} tern_seg_io;
void tern_seg_io_stats(const tern_seg *s, tern_seg_io *out);
void tern_seg_reset_io_stats(tern_seg *s);
/* Drops the segment's files from the page cache (cold-cache tests). */
int tern_seg_evict(tern_seg *s);

#endif
