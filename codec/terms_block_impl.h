/* SPDX-License-Identifier: MIT */
/*
 * terms_block_impl.h — what the readers of a terms block share, inline:
 * bits of the page, suffix lengths, the pair table's decode, tails and
 * restart keys, the batch decode's loop parts (docs/FORMAT.md, "Terms
 * blocks").  Internal to the four files that read a block: terms_block.c
 * (opening it; its entries one by one), terms_block_lookup.c (the search
 * for a key), terms_block_scan.c (batches of terms in order, seeks by
 * index) and terms_block_hits.c (a term's hits by rank).
 */
#ifndef TERN_TERMS_BLOCK_IMPL_H
#define TERN_TERMS_BLOCK_IMPL_H

#include "codec/terms_block.h"

#include "codec/coding.h"
#include "codec/status.h"

#include <assert.h>
#include <string.h>

#define VLEN_MAX (16u << 20) /* longest value */

/* Out of line and cold: the hot paths only branch to it. */
static __attribute__((cold, noinline, unused)) int corrupt(const tern_tb_block *b, const char *why) {
  return tern_fail(TERN_ECORRUPT, "%s: terms block %llu: %s", b->what,
                   (unsigned long long)b->block_no, why);
}

/* The block's last bytes, assembled one at a time: out of line, so that
 * the hot loops keep one load per read. */
static __attribute__((cold, noinline, unused)) uint64_t tail64(const uint8_t *page, uint32_t byte) {
  return tern_bits_tail64(page, byte);
}

/* tern_bits_get, its rare end-of-block case out of line. */
static inline uint64_t page_get(const uint8_t *page, uint32_t pos, unsigned w) {
  uint32_t byte = pos >> 3;
  uint64_t v = TERN_LIKELY(byte <= TERN_TB_PAGE - 8) ? tern_bits_le64(page + byte)
                                                     : tail64(page, byte);
  return (v >> (pos & 7)) & (((uint64_t)1 << w) - 1);
}

/* 8 bytes as a big-endian number (the first byte most significant), so
 * that numbers order like the bytes. */
static inline uint64_t be64_at(const uint8_t *p) { return __builtin_bswap64(tern_bits_le64(p)); }

/* The page's 8 bytes at byte `off` as be64_at; zeros past the page. */
static inline uint64_t page_be64(const uint8_t *page, uint32_t off) {
  return TERN_LIKELY(off <= TERN_TB_PAGE - 8) ? be64_at(page + off)
                                              : __builtin_bswap64(tail64(page, off));
}

static inline uint64_t get(const tern_tb_block *b, uint32_t pos, unsigned w) {
  return page_get(b->page, pos, w);
}

/* get for a column that is often 0 bits wide (a primary key's df, doc
 * and value length): no read then. */
static inline uint64_t get_col(const tern_tb_block *b, uint32_t pos, unsigned w) {
  return w ? get(b, pos, w) : 0;
}

/* The bits of slen characters: q whole codes of g and one of the rest. */
static inline uint32_t suffix_bits_of(uint32_t slen, uint32_t gdiv, uint32_t g,
                                      const uint8_t *gbits) {
  uint32_t q = (slen * gdiv) >> 16; /* slen / g, exact for slen <= 1024 */
  return q * gbits[g] + gbits[slen - q * g];
}

/* suffix_bits_of, from the table for the usual lengths. */
static inline uint32_t suffix_bits(const tern_tb_block *b, uint32_t slen) {
  if (TERN_LIKELY(slen < TERN_TB_SBITS)) return b->sbits[slen];
  return suffix_bits_of(slen, b->gdiv, b->group, b->gbits);
}

__extension__ typedef unsigned __int128 tb_u128;

/* code / K^j, exact for every code below 2^32 (K^j < 2^32). */
static inline uint32_t digit_div(const tern_tb_block *b, uint32_t code, uint32_t j) {
  return (uint32_t)(((tb_u128)code * b->rpow[j]) >> 64);
}

/* v's bytes, the lowest first, at p: one store (tern_store64 goes byte
 * by byte). */
static inline void scan_store(uint8_t *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  memcpy(p, &v, sizeof v);
}

/* Decodes an entry's tail at *pos (entry `idx`), advancing *pos.  Inlined
 * into the step (tern_tb_iter_next), which decodes one every entry;
 * decode_tail is the same out of line. */
static inline __attribute__((always_inline)) int tail_decode(const tern_tb_block *b,
                                                              uint32_t *pos, uint32_t idx,
                                                              tern_tb_tail *t) {
  uint32_t at = *pos;
  uint64_t df = b->df_min + get_col(b, at, b->bw_df);
  at += b->bw_df;
  if (df > UINT32_MAX) return corrupt(b, "df overflows");
  t->df = (uint32_t)df;
  t->pulsed = df <= b->f.threshold;
  if (t->pulsed) {
    if (df > TERN_TB_DOCS_MAX) return corrupt(b, "too many pulsed docs");
    int64_t d = b->doc_base + (int64_t)get_col(b, at, b->bw_doc) + idx;
    at += b->bw_doc;
    if (d < 0 || d >= (int64_t)b->f.max_doc) return corrupt(b, "doc id out of range");
    t->docs[0] = (uint32_t)d;
    for (uint32_t k = 1; k < df; k++) {
      d += (int64_t)get(b, at, b->bw_gap) + 1;
      at += b->bw_gap;
      if (d >= (int64_t)b->f.max_doc) return corrupt(b, "doc id out of range");
      t->docs[k] = (uint32_t)d;
    }
    t->post_off = t->post_len = 0;
  } else {
    t->post_off = b->off_min + get(b, at, b->bw_off);
    at += b->bw_off;
    t->post_len = b->len_min + get(b, at, b->bw_len);
    at += b->bw_len;
  }
  t->vlen = 0;
  t->vinline = 0;
  t->vbit = 0;
  t->voff = 0;
  if (b->f.has_values) {
    uint64_t vlen = b->vlen_min + get_col(b, at, b->bw_vlen);
    at += b->bw_vlen;
    if (vlen > VLEN_MAX) return corrupt(b, "value too long");
    t->vlen = (uint32_t)vlen;
    if (vlen <= b->f.inline_max) {
      t->vinline = 1;
      t->vbit = at;
      at += (uint32_t)vlen * 8;
    } else {
      t->voff = b->voff_min + get(b, at, b->bw_voff);
      at += b->bw_voff;
    }
  }
  if (at > b->used_bits) return corrupt(b, "entry past the end of the block");
  *pos = at;
  return TERN_OK;
}

/* The position after the tail at pos; no check (callers check the result
 * against used_bits, and every read is bounded by the page anyway). */
static inline uint32_t skip_tail(const tern_tb_block *b, uint32_t pos) {
  if (TERN_LIKELY(b->tail_bits >= 0)) return pos + (uint32_t)b->tail_bits;
  uint64_t df = b->df_min + get(b, pos, b->bw_df);
  pos += b->bw_df;
  if (df <= b->f.threshold)
    pos += b->bw_doc + (uint32_t)(df - 1) * b->bw_gap;
  else
    pos += b->bw_off + b->bw_len;
  if (b->f.has_values) {
    uint64_t vlen = b->vlen_min + get(b, pos, b->bw_vlen);
    pos += b->bw_vlen;
    pos += vlen <= b->f.inline_max ? (uint32_t)vlen * 8 : b->bw_voff;
  }
  return pos;
}

/* The r characters of one code into out; -1 when the code is outside
 * the alphabet.  q[j] = code / K^j, each from code alone, so the
 * divisions overlap instead of waiting on one another; digit j is
 * q[j] - K * q[j+1].  Inlined with r constant (decode_suffix), so q
 * lives in registers and both loops unroll. */
static inline __attribute__((always_inline)) int decode_code(const tern_tb_block *b,
                                                             uint32_t code, uint32_t r,
                                                             uint8_t *out) {
  uint32_t q[TERN_TB_GROUP_MAX + 1];
  q[0] = code;
  for (uint32_t j = 1; j < r; j++) q[j] = digit_div(b, code, j);
  q[r] = 0;
  if (q[r - 1] >= b->nsym) return -1;
  for (uint32_t j = r; j-- > 0;) *out++ = b->sym[q[j] - b->nsym * q[j + 1]];
  return 0;
}

_Static_assert(TERN_TB_GROUP_MAX == 6, "decode_suffix has a case per group size");

/* The high 64 bits of f * m; *f becomes the low 64 (one multiplication
 * gives both). */
static inline uint64_t frac_mul(uint64_t *f, uint64_t m) {
  tb_u128 x = (tb_u128)*f * m;
  *f = (uint64_t)x;
  return (uint64_t)(x >> 64);
}

/* The r characters of a code below K^r into out, with the pair table
 * from the code's fraction (code_word below): each two digits one
 * multiplication and one lookup, an odd r's leading digit alone.  The
 * block's constants as values: stores into out may alias the block.  r
 * constant when inlined. */
static inline __attribute__((always_inline)) void pair_code(const uint8_t *pair, uint64_t k1,
                                                            uint64_t k2, uint64_t rp,
                                                            uint32_t code, uint32_t r,
                                                            uint8_t *out) {
  if (r == 2) {
    memcpy(out, pair + 2 * code, 2);
    return;
  }
  uint64_t f = (uint64_t)code * rp;
  if (r & 1) *out++ = pair[2 * frac_mul(&f, k1) + 1];
  for (uint32_t j = r & 1; j < r; j += 2, out += 2) memcpy(out, pair + 2 * frac_mul(&f, k2), 2);
}

/* decode_code with the pair table; -1 when the code is outside the
 * alphabet.  r constant when inlined. */
static inline __attribute__((always_inline)) int decode_code_pairs(const tern_tb_block *b,
                                                                   uint32_t code, uint32_t r,
                                                                   uint8_t *out) {
  if (code >= b->pow[r]) return -1;
  pair_code(b->pair, b->nsym, (uint64_t)b->nsym * b->nsym, b->rpow[r], code, r, out);
  return 0;
}

/* n whole codes of g characters (g constant when inlined) at sp into out,
 * with the pair table; -1 when one is outside the alphabet. */
static inline __attribute__((always_inline)) int pair_groups(const tern_tb_block *b, uint32_t sp,
                                                             uint32_t n, uint32_t g, uint8_t *out) {
  const uint8_t *pair = b->pair, *page = b->page;
  uint64_t k1 = b->nsym, k2 = k1 * k1, rp = b->rpow[g], top = b->pow[g];
  unsigned gb = b->gbits[g];
  for (uint32_t k = 0; k < n; k++, sp += gb, out += g) {
    uint32_t code = (uint32_t)page_get(page, sp, gb);
    if (code >= top) return -1;
    pair_code(pair, k1, k2, rp, code, g, out);
  }
  return 0;
}

/* The last code of a suffix, of r < g characters (r may be 0), decoded
 * as g characters — its value is below K^r, so the first g - r come out
 * as digit 0 — into tmp, and its r characters moved to out by one 8-byte
 * copy: no branch on r, which follows the suffix length and so varies
 * from key to key.  out must have 8 bytes of room past its r. */
static inline __attribute__((always_inline)) int last_code_blind(const tern_tb_block *b,
                                                                 uint32_t sp, uint32_t r,
                                                                 uint32_t g, uint8_t *out) {
  uint8_t tmp[16] = {0};
  uint32_t code = (uint32_t)get(b, sp, b->gbits[r]);
  if (code >= b->pow[r]) return -1;
  if (decode_code_pairs(b, code, g, tmp)) return -1;
  memcpy(out, tmp + ((g - r) & 7), 8); /* g - r <= 6: the mask only tells the compiler */
  return 0;
}

/* decode_suffix with the pair table (b->pair set, group >= 2): the whole
 * codes in a loop made for the block's group size, so that the size is
 * not re-derived and switched on per code, then the last, shorter one —
 * without a branch on its length when out has `room` for 8 bytes more. */
static inline __attribute__((always_inline)) int suffix_pairs(const tern_tb_block *b, uint32_t sp,
                                                              uint32_t slen, uint8_t *out,
                                                              uint32_t room) {
  uint32_t g = b->group, n = (slen * b->gdiv) >> 16, r = slen - n * g; /* n = slen / g */
  uint32_t last = sp + n * b->gbits[g];
  uint8_t *lout = out + n * g;
  int bad;
  if (TERN_LIKELY(room >= slen + 8)) {
    switch (g) { /* the remainder first: the whole codes overwrite what it spills before */
    case 2: bad = last_code_blind(b, last, r, 2, lout) || pair_groups(b, sp, n, 2, out); break;
    case 3: bad = last_code_blind(b, last, r, 3, lout) || pair_groups(b, sp, n, 3, out); break;
    case 4: bad = last_code_blind(b, last, r, 4, lout) || pair_groups(b, sp, n, 4, out); break;
    case 5: bad = last_code_blind(b, last, r, 5, lout) || pair_groups(b, sp, n, 5, out); break;
    default: bad = last_code_blind(b, last, r, 6, lout) || pair_groups(b, sp, n, 6, out); break;
    }
    if (bad) return corrupt(b, "character outside the block alphabet");
    return TERN_OK;
  }
  switch (g) {
  case 2: bad = pair_groups(b, sp, n, 2, out); break;
  case 3: bad = pair_groups(b, sp, n, 3, out); break;
  case 4: bad = pair_groups(b, sp, n, 4, out); break;
  case 5: bad = pair_groups(b, sp, n, 5, out); break;
  default: bad = pair_groups(b, sp, n, 6, out); break;
  }
  if (!bad && r) {
    uint32_t code = (uint32_t)get(b, last, b->gbits[r]);
    switch (r) {
    case 1: bad = decode_code(b, code, 1, lout); break;
    case 2: bad = decode_code_pairs(b, code, 2, lout); break;
    case 3: bad = decode_code_pairs(b, code, 3, lout); break;
    case 4: bad = decode_code_pairs(b, code, 4, lout); break;
    default: bad = decode_code_pairs(b, code, 5, lout); break;
    }
  }
  if (bad) return corrupt(b, "character outside the block alphabet");
  return TERN_OK;
}

/* Restart r's key (its term after the block prefix): len bytes at page
 * offset *from, inside the restart area. */
static inline int restart_span(const tern_tb_block *b, uint32_t r, uint32_t *from, uint32_t *len) {
  uint32_t lo = tern_load16(b->rkey + 2 * r), to = tern_load16(b->rkey + 2 * r + 2);
  *from = *len = 0;
  if (TERN_UNLIKELY(to < lo || 8 * to > b->keys_start || b->cp + (to - lo) > TERN_TB_TERM_MAX ||
                    (b->fixed_len && b->cp + (to - lo) != b->fixed_len) || (r > 0 && to == lo)))
    return corrupt(b, "bad restart key");
  *from = lo;
  *len = to - lo;
  return TERN_OK;
}

/* Restart r's key: *len bytes at *key. */
static inline int restart_key(const tern_tb_block *b, uint32_t r, const uint8_t **key,
                              uint32_t *len) {
  uint32_t from;
  int rc = restart_span(b, r, &from, len);
  *key = b->page + from;
  return rc;
}

/* Where run r continues in the key stream (its first non-restart entry)
 * and where its restart's tail is. */
static inline int restart_pos(const tern_tb_block *b, uint32_t r, uint32_t *kpos, uint32_t *tpos) {
  if (r == 0) {
    *kpos = b->keys_start;
    *tpos = b->tails_start;
    return TERN_OK;
  }
  *kpos = tern_load16(b->rkpos + 2 * (r - 1));
  *tpos = b->rtpos ? tern_load16(b->rtpos + 2 * (r - 1))
                   : b->tails_start + r * b->restart * (uint32_t)b->tail_bits;
  if (TERN_UNLIKELY(*kpos < b->keys_start || *kpos > b->tails_start || *tpos < b->tails_start ||
                    *tpos > b->used_bits)) {
    *kpos = b->keys_start;
    *tpos = b->tails_start;
    return corrupt(b, "restart position out of range");
  }
  return TERN_OK;
}

/* A non-restart entry's shared prefix and suffix length at *pos. */
static inline int read_prefix(const tern_tb_block *b, uint32_t *pos, uint32_t cur, uint32_t *p,
                              uint32_t *slen) {
  uint32_t at = *pos;
  *slen = 0;
  *p = b->cp + (uint32_t)get(b, at, b->bw_plen);
  at += b->bw_plen;
  if (TERN_UNLIKELY(*p > cur)) return corrupt(b, "entry shares more than the previous term holds");
  if (b->fixed_len) {
    if (TERN_UNLIKELY(*p >= b->fixed_len)) return corrupt(b, "entry suffix empty");
    *slen = b->fixed_len - *p;
  } else {
    *slen = (uint32_t)get(b, at, b->bw_slen);
    at += b->bw_slen;
    if (TERN_UNLIKELY(*slen == 0 || *p + *slen > TERN_TB_TERM_MAX))
      return corrupt(b, "bad entry suffix length");
  }
  *pos = at;
  return TERN_OK;
}

/* The bit position of entry e's tail (r: its run, tpos: that run's
 * restart tail).  Direct when every tail has one width; else the run's
 * tails before it are stepped over by their lengths. */
static inline int tail_pos(const tern_tb_block *b, uint32_t e, uint32_t r, uint32_t tpos,
                           uint32_t *at) {
  uint32_t pos;
  if (TERN_LIKELY(b->tail_bits >= 0)) {
    (void)tpos;
    pos = b->tails_start + e * (uint32_t)b->tail_bits;
  } else {
    pos = tpos;
    for (uint32_t k = r * b->restart; k < e && pos <= b->used_bits; k++) pos = skip_tail(b, pos);
  }
  if (TERN_UNLIKELY(pos > b->used_bits)) return corrupt(b, "entry past the end of the block");
  *at = pos;
  return TERN_OK;
}

/* Every tail of the block is one pulsed doc id and (has_values) an inline
 * value of vlen_min bytes, all of one width: a primary key's. */
static inline int one_doc(const tern_tb_block *b) {
  return b->tail_bits >= 0 && b->df_min == 1 && b->f.threshold >= 1 &&
         (!b->f.has_values || (b->vlen_min <= b->f.inline_max && b->vlen_min <= VLEN_MAX));
}

/* decode_tail of entry e in a one_doc block (its tail at bit pos, every
 * tail of one width: no df, no value length, no gap to read). */
static inline int decode_one_doc(const tern_tb_block *b, uint32_t *pos, uint32_t e,
                                 tern_tb_tail *t) {
  uint32_t at = *pos;
  int64_t d = b->doc_base + (int64_t)get_col(b, at, b->bw_doc) + e;
  if (TERN_UNLIKELY(d < 0 || d >= (int64_t)b->f.max_doc)) return corrupt(b, "doc id out of range");
  at += b->bw_doc;
  t->df = 1;
  t->pulsed = 1;
  t->docs[0] = (uint32_t)d;
  t->post_off = t->post_len = 0;
  t->voff = 0;
  t->vlen = 0;
  t->vinline = 0;
  t->vbit = 0;
  if (b->f.has_values) {
    t->vlen = b->vlen_min;
    t->vinline = 1;
    t->vbit = at;
    at += 8 * b->vlen_min;
  }
  if (TERN_UNLIKELY(at > b->used_bits)) return corrupt(b, "entry past the end of the block");
  *pos = at;
  return TERN_OK;
}

/* The p bytes a term shares with the one before it (at prev, just below
 * dst in the batch) in 16-byte chunks: bytes copied past p are garbage
 * that the suffix then overwrites, and the batch's room covers the
 * overrun.  A chunk may read bytes of dst that an earlier chunk wrote —
 * only past p, so only garbage again.  The batch's first term shares
 * with the caller's buffer instead (exact: copied byte for byte). */
static inline void copy_shared(uint8_t *dst, const uint8_t *prev, uint32_t p, int exact) {
  if (exact) { /* prev is the caller's term buffer: nothing past its bytes */
    memcpy(dst, prev, p);
    return;
  }
  uint8_t v[16]; /* the first chunk whatever p (0 too): most terms share fewer than 16 */
  memcpy(v, prev, 16);
  memcpy(dst, v, 16);
  for (uint32_t i = 16; i < p; i += 16) {
    memcpy(v, prev + i, 16);
    memcpy(dst + i, v, 16);
  }
}

/* The block's constants a batch of terms decodes with, as locals: a store
 * into the batch's bytes may alias any memory, so constants read through
 * b would be read again after each one. */
typedef struct scan_consts {
  const uint8_t *page, *pair;
  uint64_t rg;         /* the reciprocal of K^g (code_word's fraction) */
  uint32_t k1, k2;     /* K, K^2 */
  uint32_t powg;       /* K^g - 1 */
  uint32_t gb, gmask;  /* bits of a code of g characters, and their mask */
  uint32_t cp, fixed, bw_plen, bw_slen, tails_start;
  const uint8_t *gbits;  /* bits of a code of r characters (b->gbits) */
  const uint64_t *pow;   /* K^r (b->pow) */
  const uint32_t *rmask;  /* the mask of a code of r characters (tern_tb_rmask_row) */
} scan_consts;

/* w <= 57 bits at bit pos of the key stream, pos <= tails_start: no
 * bound test, as sc->page has 8 readable bytes past tails_start / 8
 * (the block's own page, or scan_consts_of's padded copy). */
static inline uint64_t scan_read(const uint8_t *page, uint32_t pos, unsigned w) {
  return (tern_bits_le64(page + (pos >> 3)) >> (pos & 7)) & (((uint64_t)1 << w) - 1);
}

/* The g characters of a code (below K^g), the first in the lowest byte,
 * from its fraction f = code * rpow[g] (code / K^g in 64 fixed-point bits,
 * a little above: rpow[g] = floor(2^64 / K^g) + 1): multiplying f by K^2
 * brings its next two digits above the point — the high word is their
 * pair-table index hi * K + lo, the low word the fraction of the digits
 * after them — so each pair costs one multiplication, with no quotient
 * to multiply back and subtract.  Exact: the excess, below K^g in f,
 * grows to below K^(2g) <= 2^64 / K^2 by the last digit, less than the
 * 2^64 / K^(g - m) a digit's fraction keeps from the next digit's
 * boundary.  A leading odd digit d comes from f * K, its byte as the pair
 * (0, d)'s second (sym[d]: one table pointer fewer to keep in a register).
 * g constant when inlined. */
static inline __attribute__((always_inline)) uint64_t code_word(const scan_consts *sc,
                                                                uint32_t code, uint32_t g) {
  const uint8_t *pr = sc->pair;
  uint64_t k2 = sc->k2;
  tb_u128 x = (tb_u128)((uint64_t)code * sc->rg) * (g & 1 ? sc->k1 : k2);
  uint64_t a = (uint64_t)(x >> 64), c, d; /* the leading digit (g odd) or pair */
  switch (g) {
  case 2: return tern_load16(pr + 2 * code);
  case 3:
    c = (uint64_t)(((tb_u128)(uint64_t)x * k2) >> 64);
    return pr[2 * a + 1] | (uint64_t)tern_load16(pr + 2 * c) << 8;
  case 4:
    c = (uint64_t)(((tb_u128)(uint64_t)x * k2) >> 64);
    return tern_load16(pr + 2 * a) | (uint64_t)tern_load16(pr + 2 * c) << 16;
  case 5:
    x = (tb_u128)(uint64_t)x * k2;
    c = (uint64_t)(x >> 64);
    d = (uint64_t)(((tb_u128)(uint64_t)x * k2) >> 64);
    return pr[2 * a + 1] | (uint64_t)tern_load16(pr + 2 * c) << 8 |
           (uint64_t)tern_load16(pr + 2 * d) << 24;
  default:
    x = (tb_u128)(uint64_t)x * k2;
    c = (uint64_t)(x >> 64);
    d = (uint64_t)(((tb_u128)(uint64_t)x * k2) >> 64);
    return tern_load16(pr + 2 * a) | (uint64_t)tern_load16(pr + 2 * c) << 16 |
           (uint64_t)tern_load16(pr + 2 * d) << 32;
  }
}

/* slen suffix characters at bit sp into out (8 bytes of room past them),
 * with the pair table: each code's characters as one 8-byte store, the
 * next code's overwriting what it spills; the last, shorter code decoded
 * as g characters (its leading g - r digits 0) and shifted down.  Returns
 * the bit after the suffix; sets *bad when a code is outside the
 * alphabet (checked before its digits index a table). */
static inline __attribute__((always_inline)) uint32_t scan_suffix(const scan_consts *sc,
                                                                  uint32_t sp, uint32_t slen,
                                                                  uint8_t *out, uint32_t g,
                                                                  int *bad) {
  uint32_t n = slen / g, r = slen - n * g, i = 0;
  /* The suffix ends inside the key stream, checked before it is read:
   * every read below then starts at or before tails_start (scan_read). */
  uint32_t end = sp + n * sc->gb + sc->gbits[r];
  if (TERN_UNLIKELY(end > sc->tails_start)) {
    *bad = 2;
    return sp;
  }
  /* Two codes a read: they always fit in its 57 bits (scan_consts_of). */
  for (; i + 2 <= n; i += 2, sp += 2 * sc->gb, out += 2 * g) {
    uint64_t v = scan_read(sc->page, sp, 2 * sc->gb);
    uint32_t c0 = (uint32_t)v & sc->gmask, c1 = (uint32_t)(v >> sc->gb);
    if (TERN_UNLIKELY(c0 > sc->powg || c1 > sc->powg)) {
      *bad = 1;
      return sp;
    }
    scan_store(out, code_word(sc, c0, g));
    scan_store(out + g, code_word(sc, c1, g));
  }
  if (i < n) { /* the odd one: at most one is left */
    uint32_t code = (uint32_t)scan_read(sc->page, sp, sc->gb);
    if (TERN_UNLIKELY(code > sc->powg)) {
      *bad = 1;
      return sp;
    }
    scan_store(out, code_word(sc, code, g));
    sp += sc->gb;
    out += g;
  }
  uint32_t code = (uint32_t)(scan_read(sc->page, sp, 32) & sc->rmask[r]);
  if (TERN_UNLIKELY(code >= sc->pow[r])) {
    *bad = 1;
    return sp;
  }
  scan_store(out, code_word(sc, code, g) >> (8 * (g - r)));
  return end;
}

/* One entry's lengths, read at bit `at` of the key stream (the term
 * before it l bytes): its shared prefix *p and suffix length *s, checked
 * as every walk checks them.  The block's coding comes as the caller's
 * locals (cp, fixed: 0 or the one term length, the widths' masks), so
 * that a loop keeps them in registers. */
static inline __attribute__((always_inline)) int entry_lengths(
    const tern_tb_block *b, const uint8_t *page, uint32_t at, uint32_t l, uint32_t cp,
    uint32_t fixed, uint32_t bw_plen, uint32_t hb, uint32_t pmask, uint32_t smask, uint32_t *p,
    uint32_t *s) {
  uint32_t h = (uint32_t)page_get(page, at, hb);
  *p = cp + (h & pmask);
  if (TERN_UNLIKELY(*p > l)) return corrupt(b, "entry shares more than the previous term holds");
  if (fixed) {
    if (TERN_UNLIKELY(*p >= fixed)) return corrupt(b, "entry suffix empty");
    *s = fixed - *p;
  } else {
    *s = (h >> bw_plen) & smask;
    if (TERN_UNLIKELY(*s == 0 || *p + *s > TERN_TB_TERM_MAX))
      return corrupt(b, "bad entry suffix length");
  }
  return TERN_OK;
}

/* Out of line (terms_block_scan.c), shared with terms_block_hits.c:
 * scan_consts of block b (pad: where the block is copied when its key
 * stream ends within 8 bytes of the page's end, scan_read); the walk of
 * the n - 1 entries after a term by their lengths alone (suffix
 * position, shared prefix and suffix length of each); and the bytes
 * [floor, *need) the entry after such a walk shares with its last,
 * assembled backwards from the walked entries. */
void tern_tb_scan_consts_of(const tern_tb_block *b, scan_consts *sc, uint8_t *pad);
int tern_tb_walk_lengths(const tern_tb_block *b, uint32_t n, uint32_t *pos, uint32_t *len,
                         uint32_t *sp, uint32_t *pl, uint32_t *sl);
int tern_tb_assemble_shared(const tern_tb_block *b, uint32_t n, uint32_t floor,
                            const uint32_t *sp, const uint32_t *pl, const uint32_t *sl,
                            uint8_t *term, uint32_t *need);

/* Out of line (terms_block.c): the same as tail_decode, for the callers
 * that decode one tail now and then. */
int tern_tb_decode_tail(const tern_tb_block *b, uint32_t *pos, uint32_t idx, tern_tb_tail *t);
/* slen suffix characters at bit sp into out, with the pair table or
 * without (terms_block.c). */
int tern_tb_decode_suffix(const tern_tb_block *b, uint32_t sp, uint32_t slen, uint8_t *out);
/* Restart entry r's term into dst, checked (terms_block.c). */
int tern_tb_restart_term(const tern_tb_block *b, uint32_t r, uint32_t kpos, uint8_t *dst,
                         uint32_t *len, uint32_t *tpos);
/* The masks of a code of 0..TERN_TB_GROUP_MAX characters for an alphabet
 * of k bytes (a row set_digit_coding made ready). */
const uint32_t *tern_tb_rmask_row(uint32_t k);

#endif
