/* SPDX-License-Identifier: MIT */
/*
 * livedocs.c — the live-docs set: its two shapes (a runs set, a chunk
 * directory) and the rule between them, new generations by copy-on-write,
 * and the queries that dispatch to a chunk's form or to the runs.
 *
 * A directory generation is one block (struct and a slot per chunk) plus
 * the chunk payloads it references.  apply() rebuilds only the chunks a
 * batch touches; every other slot is copied and its payload shared by
 * reference count, so applying a few deletions to a large segment costs a
 * directory copy and a chunk or two, and the old generation never changes.
 * A runs set is one block (struct and its runs): apply() merges the new
 * deletions into its runs when the set stays one (livedocs_runs.c), and
 * otherwise expands it to a directory, applies, and tern_ld_settle()
 * turns the result back into a runs set when that costs fewer bytes —
 * which is what keeps a segment with a few clustered deletions at tens of
 * bytes instead of 16 bytes per chunk.
 */
#include "codec/livedocs_impl.h"

#include "codec/status.h"

#include <stdlib.h>

#define AT_BODY ((sizeof(tern_livedocs) + 15u) & ~(size_t)15u)

static int block(tern_livedocs **out, uint32_t max_doc, size_t tail) {
  *out = NULL; /* defined on failure too (gcc -O3 cannot see tern_fail's status) */
  size_t bytes = AT_BODY + tail;
  uint8_t *mem = calloc(1, bytes);
  if (!mem) return tern_fail(TERN_ENOMEM, "livedocs: out of memory for %zu bytes", bytes);
  tern_livedocs *ld = (tern_livedocs *)mem;
  ld->max_doc = max_doc;
  ld->nchunks = ld_nchunks(max_doc);
  ld->bytes = bytes;
  *out = ld;
  return TERN_OK;
}

int tern_ld_alloc(tern_livedocs **out, uint32_t max_doc) {
  size_t nslots = (size_t)ld_nchunks(max_doc) + 1u; /* +1: never empty */
  TERN_TRY(block(out, max_doc, sizeof(ld_chunk) * nslots));
  (*out)->slots = (ld_chunk *)(void *)((uint8_t *)*out + AT_BODY);
  return TERN_OK;
}

int tern_ld_alloc_runs(tern_livedocs **out, uint32_t max_doc, uint32_t nruns) {
  TERN_TRY(block(out, max_doc, 8u * (size_t)nruns));
  (*out)->first = (const uint32_t *)(const void *)((uint8_t *)*out + AT_BODY);
  (*out)->nruns = nruns;
  return TERN_OK;
}

void tern_ld_push(tern_livedocs *ld, uint32_t c, const ld_chunk *k) {
  ld->slots[c] = *k;
  ld->deleted += k->n;
  ld->nused++;
}

int tern_livedocs_new(tern_livedocs **out, uint32_t max_doc) {
  if (!out || max_doc == UINT32_MAX)
    return tern_fail(TERN_EINVAL, "livedocs: max_doc %u out of range", max_doc);
  return tern_ld_alloc_runs(out, max_doc, 0); /* no runs: the cheapest empty set */
}

void tern_livedocs_free(tern_livedocs *ld) {
  if (!ld) return;
  for (uint32_t c = 0; ld->slots && c < ld->nchunks; c++) tern_ld_payload_release(ld->slots[c].p);
  free(ld);
}

/* --- runs set <-> directory --- */

/* Builds chunk c from its bitmap words and pushes it. */
static int push_words(tern_livedocs *ld, uint32_t c, const uint64_t *words) {
  uint32_t len = ld_chunk_len(ld->max_doc, c);
  ld_chunk k;
  tern_ld_chunk_choose(&k, words, len);
  TERN_TRY(tern_ld_chunk_build(&k, words, len));
  tern_ld_push(ld, c, &k);
  return TERN_OK;
}

int tern_ld_expand(tern_livedocs **out, const tern_livedocs *rs) {
  tern_livedocs *ld;
  TERN_TRY(tern_ld_alloc(&ld, rs->max_doc));
  uint64_t *words = malloc(8u * LD_CHUNK_WORDS);
  int rc = words ? TERN_OK : tern_fail(TERN_ENOMEM, "livedocs: out of memory");
  uint32_t cur = UINT32_MAX; /* chunk whose deletions are in words */
  const uint32_t *last = rs->first + rs->nruns;
  for (uint32_t i = 0; rc == TERN_OK && i < rs->nruns; i++) {
    for (uint32_t c = rs->first[i] >> LD_CHUNK_BITS; rc == TERN_OK && c <= last[i] >> LD_CHUNK_BITS; c++) {
      uint32_t base = c << LD_CHUNK_BITS, len = ld_chunk_len(rs->max_doc, c);
      uint32_t lo = rs->first[i] > base ? rs->first[i] - base : 0;
      uint32_t hi = last[i] - base < len - 1u ? last[i] - base : len - 1u;
      if (c != cur && lo == 0 && hi == len - 1u) { /* wholly inside one run */
        tern_ld_push(ld, c, &(ld_chunk){.form = LD_FULL, .n = len});
        continue;
      }
      if (c != cur) {
        if (cur != UINT32_MAX) rc = push_words(ld, cur, words);
        memset(words, 0, 8u * LD_CHUNK_WORDS);
        cur = c;
      }
      tern_ld_set_range(words, lo, hi);
    }
  }
  if (rc == TERN_OK && cur != UINT32_MAX) rc = push_words(ld, cur, words);
  free(words);
  if (rc != TERN_OK) {
    tern_livedocs_free(ld);
    return rc;
  }
  *out = ld;
  return TERN_OK;
}

/* Runs of a directory's docs, or LD_SET_RUNS_MAX + 1 when there are more.
 * A chunk stored as array or bitmap has at least (its bytes / 4) runs, or
 * runs would have been its form: that bound stops the count before it
 * reads any large chunk.  Each chunk's runs come from its own form
 * (tern_ld_chunk_runs): a commit that deletes one document in a large
 * segment settles its new set in O(its deletions), not O(its chunks'
 * 8 KiB each). */
static uint32_t count_set_runs(const tern_livedocs *ld) {
  uint32_t r = 0, too_many = LD_SET_RUNS_MAX + 1u;
  int prev_last = 0; /* the doc before this chunk is deleted */
  for (uint32_t c = 0; c < ld->nchunks; c++) {
    const ld_chunk *k = ld_slot(ld, c);
    if (!k) {
      prev_last = 0;
      continue;
    }
    if (k->form == LD_ARRAY || k->form == LD_BITMAP) {
      size_t least = (tern_ld_payload_bytes(k->form, k->shift, k->len, k->n) + 3u) / 4u;
      if (r + least > (size_t)too_many) return too_many; /* merging saves at most one */
    }
    int first_set, last_set;
    uint32_t kr = tern_ld_chunk_runs(k, ld_chunk_len(ld->max_doc, c), &first_set, &last_set);
    r += kr - (uint32_t)(prev_last && first_set);
    if (r >= too_many) return too_many; /* a prefix's runs never decrease */
    prev_last = last_set;
  }
  return r;
}

/* The runs of a directory whose count_set_runs is nruns, into a runs set. */
static int runs_of(tern_livedocs **out, const tern_livedocs *ld, uint32_t nruns, uint64_t *words) {
  tern_livedocs *rs;
  TERN_TRY(tern_ld_alloc_runs(&rs, ld->max_doc, nruns));
  uint32_t *first = (uint32_t *)(void *)((uint8_t *)rs + AT_BODY), *last = first + nruns, nr = 0;
  for (uint32_t c = 0; c < ld->nchunks; c++) {
    const ld_chunk *k = ld_slot(ld, c);
    if (!k) continue;
    uint32_t base = c << LD_CHUNK_BITS, len = ld_chunk_len(ld->max_doc, c);
    if (k->form == LD_FULL) {
      ld_runs_append(first, last, &nr, nruns, base, base + len - 1u);
    } else if (k->form == LD_RUNS) {
      const uint32_t *runs = (const uint32_t *)k->p->data;
      for (uint32_t i = 0; i < k->len; i++)
        ld_runs_append(first, last, &nr, nruns, base + (runs[i] >> 16), base + (runs[i] & 0xffffu));
    } else {
      memset(words, 0, 8u * LD_CHUNK_WORDS);
      tern_ld_chunk_to_words(k, words);
      tern_ld_words_runs(words, (len + 63u) / 64u, base, first, last, &nr, nruns);
    }
  }
  rs->deleted = ld->deleted;
  *out = rs;
  return TERN_OK;
}

/* What a directory costs beyond the struct both shapes have
 * (livedocs_impl.h: ld_dir_slots_bytes, ld_chunk_dir_bytes). */
static uint64_t dir_cost(const tern_livedocs *ld) {
  uint64_t bytes = ld_dir_slots_bytes(ld->nchunks);
  for (uint32_t c = 0; c < ld->nchunks; c++) bytes += ld_chunk_dir_bytes(&ld->slots[c]);
  return bytes;
}

/* 1 when a runs set is cheaper than the directory; *nruns its runs. */
static int judge_runs(const tern_livedocs *ld, uint32_t *nruns) {
  uint32_t r = count_set_runs(ld);
  *nruns = r;
  return r <= LD_SET_RUNS_MAX && 8u * (uint64_t)r < dir_cost(ld);
}

int tern_ld_runs_cheaper(const tern_livedocs *ld) {
  uint32_t r;
  return judge_runs(ld, &r);
}

int tern_ld_settle(tern_livedocs **ld) {
  uint32_t r;
  if (!(*ld)->slots || !judge_runs(*ld, &r)) return TERN_OK;
  uint64_t *words = malloc(8u * LD_CHUNK_WORDS);
  if (!words) return tern_fail(TERN_ENOMEM, "livedocs: out of memory");
  tern_livedocs *rs = NULL;
  int rc = runs_of(&rs, *ld, r, words);
  free(words);
  if (rs) {
    tern_livedocs_free(*ld);
    *ld = rs;
  }
  return rc;
}

/* --- new generations --- */

/* docs grouped by chunk (counting sort): chunk c's are out[start[c]..start[c+1]). */
static int group_by_chunk(const uint32_t *docs, size_t n, uint32_t nchunks, uint32_t **out,
                          size_t **start) {
  *start = calloc((size_t)nchunks + 1u, sizeof **start);
  *out = malloc((n ? n : 1) * sizeof **out);
  if (!*start || !*out) {
    free(*start);
    free(*out);
    return tern_fail(TERN_ENOMEM, "livedocs: out of memory grouping %zu deletions", n);
  }
  size_t *s = *start;
  for (size_t i = 0; i < n; i++) s[(docs[i] >> LD_CHUNK_BITS) + 1u]++;
  for (uint32_t c = 0; c < nchunks; c++) s[c + 1] += s[c];
  for (size_t i = 0; i < n; i++) (*out)[s[docs[i] >> LD_CHUNK_BITS]++] = docs[i];
  for (uint32_t c = nchunks; c > 0; c--) s[c] = s[c - 1];
  s[0] = 0;
  return TERN_OK;
}

/* Chunk c of nl as old was (untouched, or every deletion there made
 * already): its payload shared, not copied. */
static void keep_chunk(tern_livedocs *nl, uint32_t c, const ld_chunk *old) {
  ld_payload_retain(old->p);
  tern_ld_push(nl, c, old);
}

static int cmp_u16(const void *a, const void *b) {
  return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/* rebuild_chunk's way for an array (or empty) chunk and a commit's few
 * deletions in it (at most LD_SPARSE_ADD_MAX): O(its entries) through
 * tern_ld_chunk_rebuild_sparse instead of an 8 KiB bitmap filled, counted
 * and scanned, the most of a one-document delete's commit after the
 * catalog write.  1 done, 0 not taken (the bitmap's way decides). */
static int rebuild_sparse(tern_livedocs *nl, uint32_t c, const ld_chunk *old, const uint32_t *d,
                          size_t n, uint32_t len) {
  uint16_t add[LD_SPARSE_ADD_MAX];
  for (size_t i = 0; i < n; i++) add[i] = (uint16_t)(d[i] & 0xffffu);
  qsort(add, n, sizeof *add, cmp_u16);
  uint16_t *room = malloc(((old ? old->n : 0) + n) * sizeof *room);
  if (!room) return 0; /* the bitmap's way needs no more memory */
  ld_chunk k;
  int rc = tern_ld_chunk_rebuild_sparse(&k, old, add, (uint32_t)n, len, room);
  free(room);
  if (rc == 2) { /* every doc was already deleted */
    keep_chunk(nl, c, old);
    return 1;
  }
  if (rc == 1) tern_ld_push(nl, c, &k);
  return rc;
}

/* The new form of chunk c: old deletions (if any) plus d[0..n). */
static int rebuild_chunk(tern_livedocs *nl, uint32_t c, const ld_chunk *old, const uint32_t *d,
                         size_t n, uint64_t *words) {
  uint32_t len = ld_chunk_len(nl->max_doc, c);
  if (n <= LD_SPARSE_ADD_MAX && (!old || old->form == LD_ARRAY)) {
    int rc = rebuild_sparse(nl, c, old, d, n, len);
    if (rc != 0) return rc < 0 ? rc : TERN_OK;
  }
  memset(words, 0, 8u * LD_CHUNK_WORDS);
  if (old) tern_ld_chunk_to_words(old, words);
  for (size_t i = 0; i < n; i++) words[(d[i] >> 6) & 1023u] |= 1ull << (d[i] & 63u);
  ld_chunk k;
  tern_ld_chunk_choose(&k, words, len);
  if (old && k.n == old->n) { /* every doc was already deleted */
    keep_chunk(nl, c, old);
    return TERN_OK;
  }
  TERN_TRY(tern_ld_chunk_build(&k, words, len));
  tern_ld_push(nl, c, &k);
  return TERN_OK;
}

/* The directory of base plus docs grouped by chunk. */
static int apply_dir(tern_livedocs **out, const tern_livedocs *base, const uint32_t *d,
                     const size_t *start) {
  tern_livedocs *nl = NULL;
  uint64_t *words = malloc(8u * LD_CHUNK_WORDS);
  int rc = words ? tern_ld_alloc(&nl, base->max_doc)
                 : tern_fail(TERN_ENOMEM, "livedocs_apply: out of memory");
  for (uint32_t c = 0; rc == TERN_OK && c < base->nchunks; c++) {
    const ld_chunk *old = ld_slot(base, c);
    if (start[c + 1] > start[c]) {
      rc = rebuild_chunk(nl, c, old, d + start[c], start[c + 1] - start[c], words);
    } else if (old) {
      keep_chunk(nl, c, old);
    }
  }
  free(words);
  if (rc != TERN_OK) {
    tern_livedocs_free(nl);
    return rc;
  }
  *out = nl;
  return TERN_OK;
}

int tern_livedocs_apply(tern_livedocs **out, const tern_livedocs *base, const uint32_t *docs,
                        size_t n) {
  if (!out || !base || (n && !docs)) return tern_fail(TERN_EINVAL, "livedocs_apply: NULL argument");
  for (size_t i = 0; i < n; i++)
    if (docs[i] >= base->max_doc)
      return tern_fail(TERN_EINVAL, "livedocs_apply: doc %u >= max_doc %u", docs[i],
                       base->max_doc);
  if (!base->slots) { /* a runs set that stays one: no directory built */
    int kept = tern_ld_apply_runs(out, base, docs, n);
    if (kept != 0) return kept < 0 ? kept : TERN_OK;
  }
  uint32_t *d;
  size_t *start;
  TERN_TRY(group_by_chunk(docs, n, base->nchunks, &d, &start));
  tern_livedocs *expanded = NULL, *nl = NULL;
  int rc = base->slots ? TERN_OK : tern_ld_expand(&expanded, base);
  if (rc == TERN_OK) rc = apply_dir(&nl, expanded ? expanded : base, d, start);
  if (rc == TERN_OK) rc = tern_ld_settle(&nl);
  tern_livedocs_free(expanded);
  free(d);
  free(start);
  if (rc != TERN_OK) {
    tern_livedocs_free(nl);
    return rc;
  }
  *out = nl;
  return TERN_OK;
}

/* --- queries --- */

uint32_t tern_livedocs_max_doc(const tern_livedocs *ld) { return ld->max_doc; }
uint32_t tern_livedocs_deleted(const tern_livedocs *ld) { return ld->deleted; }
uint32_t tern_livedocs_live(const tern_livedocs *ld) { return ld->max_doc - ld->deleted; }

int tern_livedocs_is_live(const tern_livedocs *ld, uint32_t doc) {
  if (TERN_UNLIKELY(doc >= ld->max_doc)) return 0;
  if (TERN_LIKELY(ld->slots != NULL)) return !ld_chunk_has(&ld->slots[doc >> LD_CHUNK_BITS], doc & 0xffffu);
  return !ld_set_runs_has(ld, doc);
}

uint32_t tern_ld_set_runs_from(const tern_livedocs *ld, uint32_t doc) {
  const uint32_t *last = ld->first + ld->nruns;
  uint32_t lo = 0, hi = ld->nruns;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (last[mid] < doc)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

size_t tern_livedocs_memory(const tern_livedocs *ld) {
  size_t bytes = ld->bytes;
  for (uint32_t c = 0; ld->slots && c < ld->nchunks; c++)
    if (ld->slots[c].p) bytes += ld->slots[c].p->bytes;
  return bytes;
}

const char *tern_livedocs_form(const tern_livedocs *ld) {
  static const char *const names[] = {"none", "sparse", "dense", "runs", "runs"};
  if (!ld->slots) return ld->nruns ? "runs" : "none";
  uint8_t form = LD_NONE;
  for (uint32_t c = 0; c < ld->nchunks; c++) {
    uint8_t f = ld->slots[c].form;
    if (f == LD_NONE) continue;
    if (f == LD_FULL) f = LD_RUNS;
    if (form != LD_NONE && f != form) return "mixed";
    form = f;
  }
  return names[form];
}
