/*
 * livedocs.c — the live-docs set: its chunk directory, new generations by
 * copy-on-write, and the queries that dispatch to a chunk's form.
 *
 * A generation is one block (struct and a slot per chunk) plus
 * the chunk payloads it references.  apply() rebuilds only the chunks a
 * batch touches; every other slot is copied and its payload shared by
 * reference count, so applying a few deletions to a large segment costs a
 * directory copy and a chunk or two, and the old generation never changes.
 */
#include "codec/livedocs_impl.h"

#include "codec/status.h"

#include <stdlib.h>

int ld_alloc(tern_livedocs **out, uint32_t max_doc) {
  uint32_t nchunks = ld_nchunks(max_doc);
  size_t at_slots = (sizeof(tern_livedocs) + 15u) & ~(size_t)15u;
  size_t bytes = at_slots + sizeof(ld_chunk) * ((size_t)nchunks + 1u); /* +1: never empty */
  uint8_t *mem = calloc(1, bytes);
  if (!mem) return tern_fail(TERN_ENOMEM, "livedocs: out of memory for %zu bytes", bytes);
  tern_livedocs *ld = (tern_livedocs *)mem;
  ld->max_doc = max_doc;
  ld->nchunks = nchunks;
  ld->slots = (ld_chunk *)(mem + at_slots);
  ld->bytes = bytes;
  *out = ld;
  return TERN_OK;
}

void ld_push(tern_livedocs *ld, uint32_t c, const ld_chunk *k) {
  ld->slots[c] = *k;
  ld->deleted += k->n;
  ld->nused++;
}

int tern_livedocs_new(tern_livedocs **out, uint32_t max_doc) {
  if (!out || max_doc == UINT32_MAX)
    return tern_fail(TERN_EINVAL, "livedocs: max_doc %u out of range", max_doc);
  return ld_alloc(out, max_doc);
}

void tern_livedocs_free(tern_livedocs *ld) {
  if (!ld) return;
  for (uint32_t c = 0; c < ld->nchunks; c++) ld_payload_release(ld->slots[c].p);
  free(ld);
}

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

/* The new form of chunk c: old deletions (if any) plus d[0..n). */
static int rebuild_chunk(tern_livedocs *nl, uint32_t c, const ld_chunk *old, const uint32_t *d,
                         size_t n, uint64_t *words) {
  uint32_t len = ld_chunk_len(nl->max_doc, c);
  memset(words, 0, 8u * LD_CHUNK_WORDS);
  if (old) ld_chunk_to_words(old, words);
  for (size_t i = 0; i < n; i++) words[(d[i] >> 6) & 1023u] |= 1ull << (d[i] & 63u);
  ld_chunk k;
  ld_chunk_choose(&k, words, len);
  if (old && k.n == old->n) { /* every doc was already deleted */
    ld_payload_retain(old->p);
    ld_push(nl, c, old);
    return TERN_OK;
  }
  TERN_TRY(ld_chunk_build(&k, words, len));
  ld_push(nl, c, &k);
  return TERN_OK;
}

int tern_livedocs_apply(tern_livedocs **out, const tern_livedocs *base, const uint32_t *docs,
                        size_t n) {
  if (!out || !base || (n && !docs)) return tern_fail(TERN_EINVAL, "livedocs_apply: NULL argument");
  for (size_t i = 0; i < n; i++)
    if (docs[i] >= base->max_doc)
      return tern_fail(TERN_EINVAL, "livedocs_apply: doc %u >= max_doc %u", docs[i],
                       base->max_doc);
  uint32_t *d;
  size_t *start;
  TERN_TRY(group_by_chunk(docs, n, base->nchunks, &d, &start));
  tern_livedocs *nl = NULL;
  uint64_t *words = malloc(8u * LD_CHUNK_WORDS);
  int rc = words ? ld_alloc(&nl, base->max_doc)
                 : tern_fail(TERN_ENOMEM, "livedocs_apply: out of memory");
  for (uint32_t c = 0; rc == TERN_OK && c < base->nchunks; c++) {
    const ld_chunk *old = ld_slot(base, c);
    if (start[c + 1] > start[c]) {
      rc = rebuild_chunk(nl, c, old, d + start[c], start[c + 1] - start[c], words);
    } else if (old) {
      ld_payload_retain(old->p);
      ld_push(nl, c, old);
    }
  }
  free(words);
  free(d);
  free(start);
  if (rc != TERN_OK) {
    tern_livedocs_free(nl);
    return rc;
  }
  *out = nl;
  return TERN_OK;
}

uint32_t tern_livedocs_max_doc(const tern_livedocs *ld) { return ld->max_doc; }
uint32_t tern_livedocs_deleted(const tern_livedocs *ld) { return ld->deleted; }
uint32_t tern_livedocs_live(const tern_livedocs *ld) { return ld->max_doc - ld->deleted; }

int tern_livedocs_is_live(const tern_livedocs *ld, uint32_t doc) {
  if (TERN_UNLIKELY(doc >= ld->max_doc)) return 0;
  return !ld_chunk_has(&ld->slots[doc >> LD_CHUNK_BITS], doc & 0xffffu);
}

uint32_t tern_livedocs_count_deleted(const tern_livedocs *ld, uint32_t from, uint32_t to) {
  if (to > ld->max_doc) to = ld->max_doc;
  if (from >= to) return 0;
  uint32_t cf = from >> LD_CHUNK_BITS, cl = (to - 1u) >> LD_CHUNK_BITS;
  uint64_t sum = 0;
  for (uint32_t c = cf; c <= cl; c++) sum += ld->slots[c].n;
  const ld_chunk *first = ld_slot(ld, cf), *last = ld_slot(ld, cl);
  if (first) sum -= ld_chunk_rank(first, from & 0xffffu, ld_chunk_len(ld->max_doc, cf));
  if (last) {
    uint32_t len = ld_chunk_len(ld->max_doc, cl);
    sum -= last->n - ld_chunk_rank(last, ((to - 1u) & 0xffffu) + 1u, len);
  }
  return (uint32_t)sum;
}

size_t tern_livedocs_filter(const tern_livedocs *ld, uint32_t *docs, size_t n) {
  size_t out = 0, i = 0;
  while (i < n && docs[i] < ld->max_doc) {
    uint32_t c = docs[i] >> LD_CHUNK_BITS;
    size_t j = i + 1;
    while (j < n && (docs[j] >> LD_CHUNK_BITS) == c && docs[j] < ld->max_doc) j++;
    if (out != i) memmove(docs + out, docs + i, (j - i) * sizeof *docs);
    const ld_chunk *k = ld_slot(ld, c);
    out += k ? ld_chunk_filter(k, docs + out, j - i) : j - i;
    i = j;
  }
  return out; /* docs >= max_doc (not of this segment) are dropped */
}

size_t tern_livedocs_memory(const tern_livedocs *ld) {
  size_t bytes = ld->bytes;
  for (uint32_t c = 0; c < ld->nchunks; c++)
    if (ld->slots[c].p) bytes += ld->slots[c].p->bytes;
  return bytes;
}

const char *tern_livedocs_form(const tern_livedocs *ld) {
  static const char *const names[] = {"none", "sparse", "dense", "runs", "runs"};
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
