/* SPDX-License-Identifier: MIT */
/*
 * terms_index.c — the resident terms index (terms_index.h): its writer,
 * the directory read at open, the per-group decode on first use, and the
 * searches.
 */
#include "codec/terms_index.h"

#include "codec/coding.h"
#include "codec/status.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define SEP_MAX TERN_TI_SEP_MAX
#define G TERN_TI_GROUP
#define REC_LONG 15u /* a length in the record's head byte: this or more follows */
#define REC_MIN 2u  /* bytes of the shortest record */

static int tern_ti_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c;
  return alen < blen ? -1 : alen > blen;
}

uint64_t tern_terms_index_head(const uint8_t *k, size_t len) {
  /* Shifted in a byte at a time: a copy into a zeroed buffer and one
   * 8-byte load of it would wait for the copy's stores to retire (the
   * load cannot take its bytes from several smaller stores). */
  uint64_t v = 0;
  size_t n = len < 8 ? len : 8;
  for (size_t i = 0; i < n; i++) v |= (uint64_t)k[i] << (56 - 8 * i);
  return v;
}

size_t tern_terms_index_separator(const uint8_t *last, size_t last_len, const uint8_t *first,
                                  size_t first_len) {
  size_t n = last_len < first_len ? last_len : first_len, i = 0;
  while (i < n && last[i] == first[i]) i++;
  return i + 1 <= first_len ? i + 1 : first_len;
}

/* ---------------------------------------------------------------- writer */

void tern_terms_index_builder_reset(tern_terms_index_builder *b) {
  b->recs.len = b->dir.len = 0;
  b->prev_len = 0;
  b->nblocks = b->ord = b->arena = 0;
  b->prev_entries = 0;
}

/* A record: one byte holding both lengths when they are below 15 (the
 * usual case: ~1 shared byte and ~4 new ones for random keys), the
 * suffix, and the entry count as its difference from the previous
 * block's (blocks of a field hold about as many entries each). */
static int put_record(tern_bytebuf *out, size_t shared, const uint8_t *suffix, size_t slen,
                      int64_t entries_delta) {
  size_t hs = shared < REC_LONG ? shared : REC_LONG, hl = slen < REC_LONG ? slen : REC_LONG;
  uint8_t head = (uint8_t)(hs << 4 | hl);
  TERN_TRY(tern_bytebuf_put(out, &head, 1));
  if (hs == REC_LONG) TERN_TRY(tern_bytebuf_varint(out, shared - REC_LONG));
  if (hl == REC_LONG) TERN_TRY(tern_bytebuf_varint(out, slen - REC_LONG));
  TERN_TRY(tern_bytebuf_put(out, suffix, slen));
  return tern_bytebuf_varint(out, tern_zigzag(entries_delta));
}

int tern_terms_index_builder_add(tern_terms_index_builder *b, const uint8_t *sep, size_t len,
                                 uint32_t entries) {
  if (len > SEP_MAX) return tern_fail(TERN_EINVAL, "terms index: separator of %zu bytes", len);
  size_t shared = 0;
  if (b->nblocks % G == 0) { /* a group starts whole, and says where */
    uint8_t e[TERN_TI_DIR_ENTRY];
    if (b->recs.len > UINT32_MAX || b->arena > UINT32_MAX)
      return tern_fail(TERN_EINVAL, "terms index: more than 4 GiB of separators");
    tern_store32(e, (uint32_t)b->recs.len);
    tern_store32(e + 4, (uint32_t)b->arena);
    tern_store64(e + 8, b->ord);
    TERN_TRY(tern_bytebuf_put(&b->dir, e, sizeof e));
  } else {
    while (shared < b->prev_len && shared < len && b->prev[shared] == sep[shared]) shared++;
  }
  TERN_TRY(put_record(&b->recs, shared, sep + shared, len - shared,
                      (int64_t)entries - (b->nblocks % G ? (int64_t)b->prev_entries : 0)));
  memcpy(b->prev, sep, len);
  b->prev_len = len;
  b->prev_entries = entries;
  b->nblocks++;
  b->ord += entries;
  b->arena += len;
  return TERN_OK;
}

int tern_terms_index_builder_finish(tern_terms_index_builder *b, tern_bytebuf *out) {
  if (b->arena > UINT32_MAX) return tern_fail(TERN_EINVAL, "terms index: too many separator bytes");
  TERN_TRY(tern_bytebuf_varint(out, b->recs.len + b->dir.len + 4));
  TERN_TRY(tern_bytebuf_put(out, b->recs.p, b->recs.len));
  TERN_TRY(tern_bytebuf_put(out, b->dir.p, b->dir.len));
  uint8_t n[4];
  tern_store32(n, (uint32_t)b->arena);
  return tern_bytebuf_put(out, n, sizeof n);
}

void tern_terms_index_builder_free(tern_terms_index_builder *b) {
  tern_bytebuf_free(&b->recs);
  tern_bytebuf_free(&b->dir);
}

/* ------------------------------------------------------------- directory */

static int bad(const char *what, uint64_t b, const char *why) {
  return tern_fail(TERN_ECORRUPT, "%s: terms index, block %llu: %s", what, (unsigned long long)b,
                   why);
}

static uint32_t dir_rec(const tern_terms_index *ix, uint64_t g) {
  return tern_load32(ix->dir + TERN_TI_DIR_ENTRY * g);
}
static uint32_t dir_arena(const tern_terms_index *ix, uint64_t g) {
  return g < ix->ngroups ? tern_load32(ix->dir + TERN_TI_DIR_ENTRY * g + 4) : ix->arena_len;
}
static uint64_t dir_ord(const tern_terms_index *ix, uint64_t g) {
  return g < ix->ngroups ? tern_load64(ix->dir + TERN_TI_DIR_ENTRY * g + 8) : ix->nterms;
}
static size_t recs_end(const tern_terms_index *ix, uint64_t g) {
  return g + 1 < ix->ngroups ? dir_rec(ix, g + 1) : ix->recs_len;
}
static uint64_t group_blocks(const tern_terms_index *ix, uint64_t g) {
  return g + 1 < ix->ngroups ? G : ix->nblocks - g * G;
}

/* One record at *p (< end): its shared length, suffix and entries (prev:
 * the previous record's entries in the group, 0 for its first). */
typedef struct ti_rec {
  uint64_t shared, slen, entries;
  const uint8_t *suffix;
} ti_rec;

static inline int read_len(const uint8_t **p, const uint8_t *end, unsigned nibble, uint64_t *v) {
  if (nibble < REC_LONG) {
    *v = nibble;
    return 0;
  }
  if (tern_get_varint(p, end, v) || *v > SEP_MAX) return -1;
  *v += REC_LONG;
  return 0;
}

static inline int read_rec(const uint8_t **p, const uint8_t *end, uint64_t prev, ti_rec *r) {
  if (*p >= end) return -1;
  unsigned head = *(*p)++;
  uint64_t z;
  if (read_len(p, end, head >> 4, &r->shared) || read_len(p, end, head & 15u, &r->slen)) return -1;
  if (r->slen > SEP_MAX || r->shared > SEP_MAX - r->slen || r->slen > (uint64_t)(end - *p))
    return -1;
  r->suffix = *p;
  *p += r->slen;
  if (tern_get_varint(p, end, &z) || z > 2u * UINT32_MAX) return -1; /* entries fit 32 bits */
  int64_t e = (int64_t)prev + tern_unzigzag(z);
  r->entries = e < 0 ? 0 : (uint64_t)e; /* 0: rejected by the caller */
  return 0;
}

/* Group g's directory entry against its neighbours, and its first record
 * (whole), which the group search compares with. */
static int open_group(tern_terms_index *ix, uint64_t g) {
  uint64_t b0 = g * G, nb = group_blocks(ix, g);
  size_t from = dir_rec(ix, g), to = recs_end(ix, g);
  uint32_t a0 = dir_arena(ix, g), a1 = dir_arena(ix, g + 1);
  uint64_t o0 = dir_ord(ix, g), o1 = dir_ord(ix, g + 1);
  if ((g == 0) != (from == 0) || to > ix->recs_len || to < from || to - from < REC_MIN * nb)
    return bad(ix->what, b0, "bad group record offsets");
  if ((g == 0) != (a0 == 0) || a1 < a0) return bad(ix->what, b0, "bad group separator offsets");
  if ((g == 0) != (o0 == 0) || o1 < o0 || o1 - o0 < nb || o1 - o0 > nb * ix->max_entries)
    return bad(ix->what, b0, "bad group ordinals");
  const uint8_t *p = ix->recs + from;
  ti_rec r;
  if (read_rec(&p, ix->recs + to, 0, &r) != 0 || r.shared != 0)
    return bad(ix->what, b0, "bad first record of a group");
  if ((b0 == 0) != (r.slen == 0)) return bad(ix->what, b0, "only block 0 has an empty separator");
  if (r.slen > a1 - a0) return bad(ix->what, b0, "group separators overflow");
  if (g && tern_ti_cmp(ix->gsep[g - 1], ix->glen[g - 1], r.suffix, r.slen) >= 0)
    return bad(ix->what, b0, "separators not ascending");
  ix->gsep[g] = r.suffix;
  ix->glen[g] = (uint32_t)r.slen;
  ix->gord[g] = o0;
  return TERN_OK;
}

/* Separator i of group g, reconstructed into buf (for `skip`). */
static int walk_sep(const tern_terms_index *ix, uint64_t g, uint64_t i, uint8_t *buf, size_t *len) {
  const uint8_t *p = ix->recs + dir_rec(ix, g), *end = ix->recs + recs_end(ix, g);
  size_t have = 0;
  uint64_t prev = 0;
  for (uint64_t k = 0; k <= i; k++) {
    ti_rec r;
    if (read_rec(&p, end, prev, &r) != 0 || r.shared > have)
      return bad(ix->what, g * G + k, "bad separator length");
    memcpy(buf + r.shared, r.suffix, (size_t)r.slen);
    have = (size_t)(r.shared + r.slen);
    prev = r.entries;
  }
  *len = have;
  return TERN_OK;
}

/* skip: the prefix that separators 1 and nblocks-1 share (so all of
 * blocks 1.. do, ascending). */
static int find_skip(tern_terms_index *ix) {
  ix->skip = 0;
  uint8_t first[SEP_MAX], last[SEP_MAX];
  size_t l1 = 0, ll = 0;
  if (ix->nblocks >= 2) {
    uint64_t lb = ix->nblocks - 1;
    TERN_TRY(walk_sep(ix, 0, 1, first, &l1));
    TERN_TRY(walk_sep(ix, lb / G, lb % G, last, &ll));
  }
  while (ix->skip < l1 && ix->skip < ll && first[ix->skip] == last[ix->skip]) ix->skip++;
  ix->prefix = malloc(ix->skip + 1);
  if (!ix->prefix) return tern_fail(TERN_ENOMEM, "%s: terms index: out of memory", ix->what);
  memcpy(ix->prefix, first, ix->skip);
  return TERN_OK;
}

/* The heads of block b's separator (block 0's: zero) into h[0], more[]
 * (unless NULL). */
static int heads_of(const tern_terms_index *ix, uint64_t b, const uint8_t *sep, size_t slen,
                    uint64_t *h, uint64_t *more) {
  if (b && ix->skip && (slen < ix->skip || memcmp(sep, ix->prefix, ix->skip) != 0))
    return bad(ix->what, b, "separator outside the prefix all share");
  size_t k = b ? ix->skip : slen;
  *h = tern_terms_index_head(sep + k, slen - k);
  for (size_t j = 0; more && j < TERN_TI_MORE; j++) {
    size_t at = k + 8 * (j + 1);
    more[j] = slen > at ? tern_terms_index_head(sep + at, slen - at) : 0;
  }
  return TERN_OK;
}

static int alloc_directory(tern_terms_index *ix) {
  uint64_t n = ix->ngroups + 1;
  ix->gheads = calloc(n, sizeof *ix->gheads);
  ix->gheads2 = calloc(n * TERN_TI_MORE, sizeof *ix->gheads2);
  ix->gord = calloc(n, sizeof *ix->gord);
  ix->glen = calloc(n, sizeof *ix->glen);
  ix->gsep = calloc(n, sizeof *ix->gsep);
  ix->groups = calloc(n, sizeof *ix->groups);
  if (!ix->gheads || !ix->gheads2 || !ix->gord || !ix->glen || !ix->gsep || !ix->groups)
    return tern_fail(TERN_ENOMEM, "%s: terms index: out of memory", ix->what);
  return TERN_OK;
}

/* The section's frame: records, directory, separator bytes in all. */
static int take_section(tern_terms_index *ix, const uint8_t **pp, const uint8_t *end) {
  uint64_t n;
  if (tern_get_varint(pp, end, &n) || n > (uint64_t)(end - *pp))
    return bad(ix->what, 0, "truncated");
  ix->ngroups = (ix->nblocks + G - 1) / G;
  uint64_t dir_len = ix->ngroups * TERN_TI_DIR_ENTRY + 4;
  /* Every record takes at least REC_MIN bytes: a hostile count cannot make
   * us allocate more than the file justifies. */
  if (n < dir_len || ix->nblocks > (n - dir_len) / REC_MIN) return bad(ix->what, 0, "more blocks than bytes");
  ix->recs = *pp;
  ix->recs_len = (size_t)(n - dir_len);
  ix->dir = ix->recs + ix->recs_len;
  ix->arena_len = tern_load32(ix->dir + dir_len - 4);
  if (ix->arena_len > ix->nblocks * SEP_MAX) return bad(ix->what, 0, "bad separator total");
  *pp += n;
  return TERN_OK;
}

int tern_terms_index_decode(tern_terms_index *ix, const uint8_t **pp, const uint8_t *end,
                            uint64_t nblocks, uint64_t nterms, uint32_t max_entries,
                            const char *what) {
  memset(ix, 0, sizeof *ix);
  ix->nblocks = nblocks;
  ix->nterms = nterms;
  ix->max_entries = max_entries;
  ix->what = what;
  const uint8_t *p = *pp;
  int rc = take_section(ix, &p, end);
  if (rc == TERN_OK && (nblocks == 0) != (nterms == 0)) rc = bad(what, 0, "terms without blocks");
  if (rc == TERN_OK) rc = alloc_directory(ix);
  for (uint64_t g = 0; rc == TERN_OK && g < ix->ngroups; g++) rc = open_group(ix, g);
  if (rc == TERN_OK) rc = find_skip(ix);
  for (uint64_t g = 0; rc == TERN_OK && g < ix->ngroups; g++) {
    rc = heads_of(ix, g * G, ix->gsep[g], ix->glen[g], &ix->gheads[g],
                  ix->gheads2 + TERN_TI_MORE * g);
    ix->long_seps |= g > 0 && ix->glen[g] > ix->skip + 8;
  }
  if (rc != TERN_OK) {
    tern_terms_index_free(ix);
    return rc;
  }
  ix->gord[ix->ngroups] = nterms;
  *pp = p;
  return TERN_OK;
}

void tern_terms_index_free(tern_terms_index *ix) {
  for (uint64_t g = 0; ix->groups && g < ix->ngroups; g++) free(atomic_load(&ix->groups[g]));
  free((void *)ix->groups);
  free(ix->gheads);
  free(ix->gheads2);
  free(ix->gord);
  free(ix->glen);
  free((void *)ix->gsep);
  free(ix->prefix);
  memset(ix, 0, sizeof *ix);
}

/* ----------------------------------------------------------------- groups */

/* The slot after group g's last block: the next group's first (or the
 * end of the field). */
static void set_end_slot(const tern_terms_index *ix, uint64_t g, tern_ti_group *gr, uint64_t nb) {
  gr->first_ord[nb] = ix->gord[g + 1];
}

/* The group's own prefix (what separators 1..nb-1 share: those of the
 * first and the last, as they ascend) and each separator's head after
 * it. */
static void set_local_heads(tern_ti_group *gr, uint64_t nb) {
  gr->lskip = 0;
  gr->long_seps = 0;
  gr->lheads[0] = 0;
  if (nb < 2) return;
  const uint8_t *a = gr->sep + gr->sep_off[1], *z = gr->sep + gr->sep_off[nb - 1];
  uint32_t la = gr->sep_off[2] - gr->sep_off[1], lz = gr->sep_off[nb] - gr->sep_off[nb - 1], l = 0;
  while (l < la && l < lz && a[l] == z[l]) l++;
  gr->lskip = l;
  gr->lheads[0] = tern_terms_index_head(a, l < 8 ? l : 8); /* the prefix's head */
  for (uint64_t i = 1; i < nb; i++) {
    const uint8_t *sep = gr->sep + gr->sep_off[i];
    size_t len = gr->sep_off[i + 1] - gr->sep_off[i];
    assert(len >= l && memcmp(sep, a, l) == 0); /* between the first and the last, ascending */
    gr->lheads[i] = tern_terms_index_head_at(sep, len, l);
    gr->long_seps |= len - l > 8;
    for (size_t j = 0; j < TERN_TI_MORE; j++)
      gr->lmore[TERN_TI_MORE * i + j] = tern_terms_index_head_at(sep, len, l + 8 * (j + 1));
  }
}

/* Group g's records into gr: lengths, order (one byte compare per
 * record: the writer shares all it can, so a record above its
 * predecessor either extends it or has a greater byte where they part)
 * and sums against the directory.  That every separator of blocks 1..
 * starts with the index's prefix follows: the group's first was checked
 * at open (heads_of); the next group's first shares it too, and those
 * between ascend; and the last block's is one the prefix was taken from
 * (find_skip, through these records). */
static int decode_group(const tern_terms_index *ix, uint64_t g, tern_ti_group *gr) {
  uint64_t b0 = g * G, nb = group_blocks(ix, g);
  const uint8_t *p = ix->recs + dir_rec(ix, g), *end = ix->recs + recs_end(ix, g);
  uint32_t at = 0, stop = dir_arena(ix, g + 1) - dir_arena(ix, g);
  uint64_t ord = ix->gord[g];
  const uint8_t *prev = gr->sep;
  size_t prev_len = 0;
  uint64_t prev_entries = 0;
  for (uint64_t i = 0; i < nb; i++) {
    ti_rec r;
    if (read_rec(&p, end, i ? prev_entries : 0, &r) != 0) return bad(ix->what, b0 + i, "truncated");
    if (r.entries < 1 || r.entries > ix->max_entries) return bad(ix->what, b0 + i, "bad entry count");
    size_t len = (size_t)(r.shared + r.slen);
    if (r.shared > prev_len || (i && r.slen == 0) || len > stop - at)
      return bad(ix->what, b0 + i, "bad separator length");
    if (i && r.shared < prev_len && r.suffix[0] <= prev[r.shared])
      return bad(ix->what, b0 + i, "separators not ascending");
    uint8_t *sep = gr->sep + at;
    memcpy(sep, prev, (size_t)r.shared);
    memcpy(sep + r.shared, r.suffix, (size_t)r.slen);
    gr->sep_off[i] = at;
    gr->first_ord[i] = ord;
    prev = sep;
    prev_len = len;
    at += (uint32_t)len;
    ord += r.entries;
    prev_entries = r.entries;
  }
  gr->sep_off[nb] = at;
  set_end_slot(ix, g, gr, nb);
  set_local_heads(gr, nb);
  if (p != end || at != stop || ord != ix->gord[g + 1])
    return bad(ix->what, b0 + nb - 1, "group differs from the directory");
  if (g + 1 < ix->ngroups && tern_ti_cmp(prev, prev_len, ix->gsep[g + 1], ix->glen[g + 1]) >= 0)
    return bad(ix->what, b0 + nb, "separators not ascending");
  return TERN_OK;
}

/* Group g, decoded by this thread if no other published it yet (g out
 * of range: a block number past the field, from a caller's bug). */
int tern_terms_index_group_decode(const tern_terms_index *ix, uint64_t g,
                                  const tern_ti_group **out) {
  if (g >= ix->ngroups) return bad(ix->what, ix->nblocks, "block out of range");
  tern_ti_group *gr = atomic_load_explicit(&ix->groups[g], memory_order_acquire);
  if (gr) {
    *out = gr;
    return TERN_OK;
  }
  size_t bytes = dir_arena(ix, g + 1) - dir_arena(ix, g);
  /* Line-aligned: the search's heads then fill 9 whole lines. */
  gr = aligned_alloc(64, (sizeof *gr + bytes + 63) / 64 * 64);
  if (!gr) return tern_fail(TERN_ENOMEM, "%s: terms index: out of memory", ix->what);
  int rc = decode_group(ix, g, gr);
  if (rc != TERN_OK) {
    free(gr);
    return rc;
  }
  tern_ti_group *none = NULL;
  if (!atomic_compare_exchange_strong_explicit(&ix->groups[g], &none, gr, memory_order_acq_rel,
                                               memory_order_acquire)) {
    free(gr); /* another thread's copy is the same */
    gr = none;
  }
  *out = gr;
  return TERN_OK;
}

int tern_terms_index_ensure_all(const tern_terms_index *ix) {
  const tern_ti_group *gr;
  for (uint64_t g = 0; g < ix->ngroups; g++) TERN_TRY(tern_terms_index_group(ix, g, &gr));
  return TERN_OK;
}

int tern_terms_index_sep(const tern_terms_index *ix, uint64_t b, const uint8_t **sep, size_t *len) {
  if (b >= ix->nblocks) return bad(ix->what, b, "block out of range");
  const tern_ti_group *gr;
  TERN_TRY(tern_terms_index_group(ix, b / G, &gr));
  uint64_t i = b % G;
  *sep = gr->sep + gr->sep_off[i];
  *len = gr->sep_off[i + 1] - gr->sep_off[i];
  return TERN_OK;
}

/* --------------------------------------------------------------- search */

/* The key's heads past the first (computed on the first tie). */
typedef struct key_heads {
  uint64_t h, more[TERN_TI_MORE];
  int have;
} key_heads;

/* The key's heads past its first, taken on its first tie. */
static __attribute__((noinline)) void key_more_heads(const tern_terms_index *ix, key_heads *kh,
                                                     const uint8_t *key, size_t len) {
  for (size_t j = 0; j < TERN_TI_MORE; j++)
    kh->more[j] = tern_terms_index_head_at(key, len, ix->skip + 8 * (j + 1));
  kh->have = 1;
}

/* A separator whose first head ties with the key's: its next heads (keys
 * sharing those too: paths, URLs) — one line, as they are interleaved —
 * against the key's: -1 below, 1 above, 0 when they tie as well and the
 * bytes decide.  Zero-padded heads order like the keys wherever they
 * differ.  Inline: keys with long shared prefixes tie at most probes, and
 * a call cost more than the compares. */
static inline int more_cmp(const tern_terms_index *ix, const uint64_t *more, key_heads *kh,
                           const uint8_t *key, size_t len) {
  if (TERN_UNLIKELY(!kh->have)) key_more_heads(ix, kh, key, len);
  for (size_t j = 0; j < TERN_TI_MORE; j++)
    if (more[j] != kh->more[j]) return more[j] < kh->more[j] ? -1 : 1;
  return 0;
}

/* The last i in [0, n) whose head is <= h (le) or < h (!le), taking
 * heads[0] as below h (slot 0 is never probed): a binary search without
 * branches on the heads (a conditional move a step), since which way a
 * probe goes is a coin toss the branch predictor loses half the time.
 * Heads order like the keys wherever they differ, so a head below the
 * key's is a separator below the key and one above is above; only the
 * slots whose head equals the key's need the bytes after it (tie_range). */
static inline uint64_t heads_search(const uint64_t *heads, uint64_t n, uint64_t h, int le) {
  uint64_t lo = 0;
  while (n > 1) {
    uint64_t half = n / 2, x = heads[lo + half];
    lo = (le ? x <= h : x < h) ? lo + half : lo;
    n -= half;
  }
  return lo;
}

/* The slots [*lo, *lo + *n) among which the search must look at more than
 * heads: 0 when no slot past 0 has the key's head h (the answer is then
 * heads_search's, in *lo), else from the last slot below h to the last
 * equal to it.  Not where separators run past their heads (long_seps:
 * paths, URLs): keys tie with them so often that the search by bytes,
 * whose branches then mostly go one way, costs less than two searches by
 * heads before it (callgrind, 200K paths: +200 instructions a get). */
static inline uint64_t tie_range(const uint64_t *heads, uint64_t n, uint64_t h, uint64_t *lo) {
  uint64_t hi = heads_search(heads, n, h, 1);
  *lo = hi;
  if (hi == 0 || heads[hi] != h) return 0;
  *lo = heads_search(heads, hi + 1, h, 0);
  return hi - *lo + 1;
}

/* The first separator of group g (>= 1) <= key: from the directory. */
static inline int group_le(const tern_terms_index *ix, uint64_t g, key_heads *kh,
                           const uint8_t *key, size_t len) {
  uint64_t h = ix->gheads[g];
  if (TERN_LIKELY(h != kh->h)) return h < kh->h;
  int c = more_cmp(ix, ix->gheads2 + TERN_TI_MORE * g, kh, key, len);
  if (TERN_LIKELY(c != 0)) return c < 0;
  return tern_ti_cmp(ix->gsep[g], ix->glen[g], key, len) <= 0;
}

/* The separator of slot i (>= 1) of a decoded group <= key, for a key
 * that starts with the group's prefix (lskip bytes) and whose head after
 * it is lh.  Equal heads: the bytes after the prefix decide. */
static inline int slot_le(const tern_ti_group *gr, uint64_t i, key_heads *lk, const uint8_t *key,
                          size_t len) {
  uint64_t h = gr->lheads[i];
  if (TERN_LIKELY(h != lk->h)) return h < lk->h;
  size_t skip = gr->lskip;
  if (TERN_UNLIKELY(!lk->have)) {
    for (size_t j = 0; j < TERN_TI_MORE; j++)
      lk->more[j] = tern_terms_index_head_at(key, len, skip + 8 * (j + 1));
    lk->have = 1;
  }
  const uint64_t *more = gr->lmore + TERN_TI_MORE * i;
  for (size_t j = 0; j < TERN_TI_MORE; j++)
    if (more[j] != lk->more[j]) return more[j] < lk->more[j];
  return tern_ti_cmp(gr->sep + gr->sep_off[i] + skip, gr->sep_off[i + 1] - gr->sep_off[i] - skip,
                     key + skip, len - skip) <= 0;
}

int tern_terms_index_find(const tern_terms_index *ix, const uint8_t *key, size_t len, uint64_t *b) {
  return tern_terms_index_find_head(ix, tern_terms_index_key_head(ix, key, len), key, len, b);
}

/* tern_terms_index_find_group with the key's heads in *k (the more heads
 * computed on the first tie, kept for the search in the group). */
static int find_group(const tern_terms_index *ix, key_heads *k, const uint8_t *key, size_t len,
                      uint64_t *g, uint64_t *b) {
  *b = 0;
  *g = 0;
  if (ix->nblocks == 0) return 1;
  if (ix->skip) { /* against the prefix every separator past block 0 has */
    size_t m = len < ix->skip ? len : ix->skip;
    int c = memcmp(key, ix->prefix, m);
    if (c < 0 || (c == 0 && len < ix->skip)) return 1;
    if (c > 0) {
      *b = ix->nblocks - 1;
      return 1;
    }
  }
  /* The group, from the directory: by the heads, then among the groups
   * whose first head ties with the key's (if any) by the bytes after;
   * by the bytes throughout when separators run past their heads. */
  uint64_t lo = 0, n = ix->ngroups;
  if (!ix->long_seps) n = tie_range(ix->gheads, n, k->h, &lo);
  for (; n > 1;) {
    uint64_t half = n / 2;
    if (group_le(ix, lo + half, k, key, len)) lo += half;
    n -= half;
  }
  *g = lo;
  return 0;
}

int tern_terms_index_find_group(const tern_terms_index *ix, uint64_t kh, const uint8_t *key,
                                size_t len, uint64_t *g, uint64_t *b) {
  key_heads k = {.h = kh, .have = 0};
  return find_group(ix, &k, key, len, g, b);
}

/* Starts fetching every line of group g's search heads, so that the
 * search's probes wait for one miss instead of one each.  Inlined always:
 * GCC drops calls to a function that only prefetches. */
static inline __attribute__((always_inline)) void prefetch_group_heads(const tern_terms_index *ix,
                                                                       uint64_t g) {
  const tern_ti_group *gr = atomic_load_explicit(&ix->groups[g], memory_order_acquire);
  if (!gr) return; /* decoded by the search */
  /* lskip and lheads: 8 bytes and 8 lines from the group's (line-aligned)
   * start, so 9 lines; unrolled: no loop to pay. */
  const uint8_t *h = (const uint8_t *)gr;
  _Static_assert(offsetof(tern_ti_group, lheads) + sizeof gr->lheads <= 9 * 64, "9 lines");
  __builtin_prefetch(h + 512);
  __builtin_prefetch(h);
  __builtin_prefetch(h + 64);
  __builtin_prefetch(h + 128);
  __builtin_prefetch(h + 192);
  __builtin_prefetch(h + 256);
  __builtin_prefetch(h + 320);
  __builtin_prefetch(h + 384);
  __builtin_prefetch(h + 448);
}

void tern_terms_index_prefetch_group(const tern_terms_index *ix, uint64_t g) {
  prefetch_group_heads(ix, g);
}

/* memcmp of m bytes, inline and 8 at a time: a group's prefix is mostly
 * short (random keys: a byte or two), where a call would cost more than
 * the compare. */
static inline int prefix_cmp(const uint8_t *a, const uint8_t *b, size_t m) {
  size_t i = 0;
  for (; i + 8 <= m; i += 8) {
    uint64_t x = tern_terms_index_head_at(a + i, 8, 0), y = tern_terms_index_head_at(b + i, 8, 0);
    if (x != y) return x < y ? -1 : 1;
  }
  for (; i < m; i++)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

static int find_in_group(const tern_terms_index *ix, uint64_t g, const uint8_t *key, size_t len,
                         uint64_t *b) {
  const tern_ti_group *gr;
  TERN_TRY(tern_terms_index_group(ix, g, &gr));
  uint64_t lo = 0, n = group_blocks(ix, g);
  if (n > 1) {
    /* Against the group's prefix first (its separators 1..n-1 all start
     * with it; the key is >= slot 0's): below it, slot 0; above, the
     * last slot; else the heads after it decide. */
    size_t skip = gr->lskip, m = len < skip ? len : skip;
    int c;
    if (skip <= 8) { /* the prefix's head decides, without its bytes' line */
      uint64_t mask = skip ? ~(uint64_t)0 << (64 - 8 * skip) : 0;
      uint64_t kp = tern_terms_index_head_at(key, len, 0) & mask;
      c = kp == gr->lheads[0] ? 0 : kp < gr->lheads[0] ? -1 : 1;
    } else {
      c = prefix_cmp(key, gr->sep + gr->sep_off[1], m);
    }
    if (c > 0) {
      lo = n - 1;
    } else if (c == 0 && len >= skip) {
      key_heads lk = {.h = tern_terms_index_head_at(key, len, skip), .have = 0};
      if (!gr->long_seps) n = tie_range(gr->lheads, n, lk.h, &lo); /* by heads */
      for (; n > 1;) { /* the slots tied with the key's head (all: long_seps) */
        uint64_t half = n / 2;
        if (slot_le(gr, lo + half, &lk, key, len)) lo += half;
        n -= half;
      }
    }
  }
  *b = g * G + lo;
  return TERN_OK;
}

int tern_terms_index_find_in_group(const tern_terms_index *ix, uint64_t g, uint64_t kh,
                                   const uint8_t *key, size_t len, uint64_t *b) {
  (void)kh; /* the group's search takes its heads after the group's own prefix */
  return find_in_group(ix, g, key, len, b);
}

int tern_terms_index_find_head(const tern_terms_index *ix, uint64_t kh, const uint8_t *key,
                               size_t len, uint64_t *out) {
  uint64_t g;
  key_heads k = {.h = kh, .have = 0};
  int rc = find_group(ix, &k, key, len, &g, out);
  if (rc != 0) return rc < 0 ? rc : TERN_OK;
  prefetch_group_heads(ix, g);
  return find_in_group(ix, g, key, len, out);
}

/* ----------------------------------------------------------------- walks */

void tern_terms_index_walk_init(tern_ti_walk *w) {
  w->g = UINT64_MAX;
  w->have_next = 0;
}

/* Group g's records against the directory, by their lengths and entries
 * alone: where they end, what their entries add up to (so that every
 * ordinal a walk gives is the decode's, wherever it stops). */
static int walk_check_group(const tern_terms_index *ix, uint64_t g) {
  const uint8_t *p = ix->recs + dir_rec(ix, g), *end = ix->recs + recs_end(ix, g);
  uint64_t nb = group_blocks(ix, g), ord = ix->gord[g], prev = 0;
  for (uint64_t i = 0; i < nb; i++) {
    ti_rec r;
    if (read_rec(&p, end, prev, &r) != 0) return bad(ix->what, g * G + i, "truncated");
    if (r.entries < 1 || r.entries > ix->max_entries) return bad(ix->what, g * G + i, "bad entry count");
    ord += r.entries;
    prev = r.entries;
  }
  if (p != end || ord != ix->gord[g + 1])
    return bad(ix->what, g * G + nb - 1, "group differs from the directory");
  return TERN_OK;
}

/* Starts w at group g's first record (checked at open: open_group). */
static int walk_start(const tern_terms_index *ix, tern_ti_walk *w, uint64_t g) {
  w->g = UINT64_MAX; /* until it is read */
  TERN_TRY(walk_check_group(ix, g));
  w->p = ix->recs + dir_rec(ix, g);
  w->end = ix->recs + recs_end(ix, g);
  ti_rec r;
  if (read_rec(&w->p, w->end, 0, &r) != 0) return bad(ix->what, g * G, "truncated");
  if (r.entries < 1 || r.entries > ix->max_entries) return bad(ix->what, g * G, "bad entry count");
  w->cur = 0;
  w->len[0] = (size_t)r.slen; /* open_group checked it: whole, at most SEP_MAX */
  memcpy(w->sep[0], r.suffix, (size_t)r.slen);
  w->i = 0;
  w->nb = group_blocks(ix, g);
  w->ord = ix->gord[g];
  w->entries = r.entries;
  w->have_next = 0;
  w->g = g;
  return TERN_OK;
}

/* Reads the record after the current block's into the other separator,
 * checked as decode_group checks it. */
static int walk_read_next(const tern_terms_index *ix, tern_ti_walk *w) {
  uint64_t b = w->g * G + w->i + 1;
  const uint8_t *prev = w->sep[w->cur];
  size_t prev_len = w->len[w->cur];
  ti_rec r;
  if (read_rec(&w->p, w->end, w->entries, &r) != 0) return bad(ix->what, b, "truncated");
  if (r.entries < 1 || r.entries > ix->max_entries) return bad(ix->what, b, "bad entry count");
  if (r.shared > prev_len || r.slen == 0 || r.shared + r.slen > SEP_MAX)
    return bad(ix->what, b, "bad separator length");
  if (r.shared < prev_len && r.suffix[0] <= prev[r.shared])
    return bad(ix->what, b, "separators not ascending");
  uint8_t *next = w->sep[!w->cur];
  memcpy(next, prev, (size_t)r.shared);
  memcpy(next + r.shared, r.suffix, (size_t)r.slen);
  w->len[!w->cur] = (size_t)(r.shared + r.slen);
  w->next_entries = r.entries;
  w->have_next = 1;
  return TERN_OK;
}

int tern_terms_index_walk_find(const tern_terms_index *ix, tern_ti_walk *w, uint64_t kh,
                               const uint8_t *key, size_t len, uint64_t *b, tern_ti_block *info) {
  uint64_t g;
  key_heads k = {.h = kh, .have = 0};
  int rc = find_group(ix, &k, key, len, &g, b);
  if (rc < 0) return rc;
  /* decided by the prefix (a key outside the index's range), or a group
   * already decoded: searched */
  if (rc == 1 || atomic_load_explicit(&ix->groups[g], memory_order_acquire)) {
    if (rc == 0) TERN_TRY(find_in_group(ix, g, key, len, b));
    return tern_terms_index_block(ix, *b, info);
  }
  if (w->g != g || tern_ti_cmp(w->sep[w->cur], w->len[w->cur], key, len) > 0)
    TERN_TRY(walk_start(ix, w, g));
  while (w->i + 1 < w->nb) {
    if (!w->have_next) TERN_TRY(walk_read_next(ix, w));
    if (tern_ti_cmp(w->sep[!w->cur], w->len[!w->cur], key, len) > 0) break;
    w->ord += w->entries; /* the next block holds keys up to this one */
    w->entries = w->next_entries;
    w->cur = !w->cur;
    w->i++;
    w->have_next = 0;
  }
  *b = g * G + w->i;
  info->first_ord = w->ord;
  info->entries = (uint32_t)w->entries;
  return TERN_OK;
}

int tern_terms_index_find_ordinal(const tern_terms_index *ix, uint64_t ord, uint64_t *out) {
  uint64_t g = 0, n = ix->ngroups;
  *out = 0;
  if (n == 0) return TERN_OK;
  while (n > 1) {
    uint64_t half = n / 2;
    if (ix->gord[g + half] <= ord) g += half;
    n -= half;
  }
  const tern_ti_group *gr;
  TERN_TRY(tern_terms_index_group(ix, g, &gr));
  uint64_t lo = 0;
  for (n = group_blocks(ix, g); n > 1;) {
    uint64_t half = n / 2;
    if (gr->first_ord[lo + half] <= ord) lo += half;
    n -= half;
  }
  *out = g * G + lo;
  return TERN_OK;
}
