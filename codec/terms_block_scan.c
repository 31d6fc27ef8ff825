/* SPDX-License-Identifier: MIT */
/*
 * terms_block_scan.c — decodes a terms block in order: batches of terms
 * for a scanning cursor (tern_tb_iter_keys: the key stream in one tight
 * loop, each term whole), positioning by entry index (tern_tb_iter_seek),
 * and the terms of chosen entries, a term's hits by rank
 * (tern_tb_resolve).  Terms are prefix-coded against the one before, so
 * each of these walks from a restart or from where it stood.
 */
#include "codec/terms_block_impl.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ------------------------------------------------------- batched scanning */

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

/* One non-restart entry's term at *kpos into dst, the previous term
 * (*len bytes) at prev; room: bytes writable at dst; exact: prev is the
 * caller's term buffer. */
static inline __attribute__((always_inline)) int batch_term(const tern_tb_block *b, uint32_t *kpos,
                                                            uint32_t *len, const uint8_t *prev,
                                                            uint8_t *dst, uint32_t room,
                                                            int exact) {
  uint32_t p, slen;
  TERN_TRY(read_prefix(b, kpos, *len, &p, &slen));
  copy_shared(dst, prev, p, exact);
  TERN_TRY(b->pair ? suffix_pairs(b, *kpos, slen, dst + p, room - p)
                   : tern_tb_decode_suffix(b, *kpos, slen, dst + p));
  *kpos += suffix_bits(b, slen);
  *len = p + slen;
  if (TERN_UNLIKELY(*kpos > b->tails_start)) return corrupt(b, "key past the end of the key stream");
  return TERN_OK;
}

/* A batch's tails, in a block whose every entry has one doc and an inline
 * value of one length (one_doc): the checks decode_one_doc makes. */
static int keys_tails(const tern_tb_block *b, const tern_tb_iter *it, tern_tb_keys *k) {
  k->tails = one_doc(b);
  if (!k->tails) return TERN_OK;
  k->vlen = b->f.has_values ? b->vlen_min : 0;
  uint32_t tpos = it->pos, step = (uint32_t)b->tail_bits, bw = b->bw_doc;
  int64_t base = b->doc_base + k->first, max = b->f.max_doc;
  /* Every tail is step bits, its value after its doc (bw bits): the
   * values' positions are vbit0 + j * step, nothing to store a step. */
  k->vbit0 = tpos + bw;
  k->vstep = step;
  k->doc_col = bw != 0;
  if (bw == 0) {
    /* No doc column (doc ids are the entries' ordinals, as the engine
     * writes them): doc j is base + j, so the first and the last bound
     * them all. */
    if (TERN_UNLIKELY(k->n && (base < 0 || base + k->n - 1 >= max)))
      return corrupt(b, "doc id out of range");
    k->doc0 = (uint32_t)base;
    tpos += k->n * step;
  } else {
    for (uint32_t j = 0; j < k->n; j++, tpos += step) {
      int64_t d = base + (int64_t)get_col(b, tpos, bw) + j;
      if (TERN_UNLIKELY(d < 0 || d >= max)) return corrupt(b, "doc id out of range");
      k->doc[j] = (uint32_t)d;
    }
  }
  if (TERN_UNLIKELY(tpos > b->used_bits)) return corrupt(b, "entry past the end of the block");
  return TERN_OK;
}

/* The end of a batch of j terms (e: the entry after them, kpos and len:
 * the key side after them, prev: the last term). */
static int keys_end(const tern_tb_block *b, tern_tb_iter *it, uint8_t *term, tern_tb_keys *k,
                    uint32_t e, uint32_t j, uint32_t kpos, uint32_t len, const uint8_t *prev) {
  if (e == b->n && (kpos + 7) / 8 * 8 != b->tails_start)
    return corrupt(b, "key stream length differs from its entries");
  memcpy(term, prev, len);
  it->kpos = kpos;
  it->len = len;
  k->n = j;
  return keys_tails(b, it, k);
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

/* pad: where the block is copied when its key stream ends within 8
 * bytes of the page's end (scan_read). */
static void scan_consts_of(const tern_tb_block *b, scan_consts *sc, uint8_t *pad) {
  sc->page = b->page;
  if (TERN_UNLIKELY(b->tails_start / 8 + 8 > TERN_TB_PAGE)) {
    memcpy(pad, b->page, TERN_TB_PAGE);
    memset(pad + TERN_TB_PAGE, 0, 8);
    sc->page = pad;
  }
  sc->pair = b->pair;
  sc->rg = b->rpow[b->group];
  sc->k1 = b->nsym;
  sc->k2 = b->nsym * b->nsym;
  sc->powg = (uint32_t)(b->pow[b->group] - 1); /* K^g <= 2^32: its largest code */
  sc->gb = b->gbits[b->group];
  /* A valid group has K^(g+1) <= 2^32 (set_digit_coding), so a code of g
   * characters has at most 28 bits (g = 6, K = 23): two fit in one read. */
  assert(2 * sc->gb <= 57);
  sc->gmask = (uint32_t)(((uint64_t)1 << sc->gb) - 1);
  sc->cp = b->cp;
  sc->fixed = b->fixed_len;
  sc->bw_plen = b->bw_plen;
  sc->bw_slen = b->fixed_len ? 0 : b->bw_slen;
  sc->tails_start = b->tails_start;
  sc->gbits = b->gbits;
  sc->pow = b->pow;
  /* The row set_digit_coding made ready (b->tables: tern_tb_iter_keys
   * tested it). */
  sc->rmask = tern_tb_rmask_row(b->nsym ? b->nsym : 1);
}

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

/* Restart r's term at dst in a batch, inline and without calls (a
 * restart was an eighth of a scan's entries and a fifth of its decode),
 * with restart_term's checks of the key side: its position in the key
 * stream (equal to kpos, which the stream keeps inside it), its key's
 * span and the previous restart key's, and that the two ascend.  Its
 * tail position is not the key side's: a batch with tails bounds them by
 * the block's used length (keys_tails), and tern_tb_iter_tail checks a
 * restart's own.  page: the batch's scan_consts page, readable 8 bytes
 * past tails_start / 8, so past every restart key (they end at
 * keys_start / 8).  The block prefix is copied from the term before it
 * in the batch (prev; every term of the block starts with the prefix,
 * and the batch's room covers copy_shared's overrun). */
static inline __attribute__((always_inline)) int batch_restart(const tern_tb_block *b,
                                                               const uint8_t *page, uint32_t r,
                                                               uint32_t kpos, uint8_t *dst,
                                                               const uint8_t *prev,
                                                               uint32_t *len) {
  uint32_t rk = r == 0 ? b->keys_start : tern_load16(b->rkpos + 2 * (r - 1));
  if (TERN_UNLIKELY(rk != kpos)) return corrupt(b, "restart position differs from the stream");
  uint32_t lo, klen;
  TERN_TRY(restart_span(b, r, &lo, &klen));
  if (r > 0) {
    uint32_t plo, plen;
    TERN_TRY(restart_span(b, r - 1, &plo, &plen));
    /* Ascending, 8 bytes at a time (a difference at or past the shorter
     * length only ends the comparison). */
    uint32_t m = plen < klen ? plen : klen, at = 0;
    int cmp = (plen > klen) - (plen < klen);
    for (; at < m; at += 8) {
      uint64_t x = be64_at(page + plo + at), y = be64_at(page + lo + at);
      if (x != y) {
        if (at + (uint32_t)__builtin_clzll(x ^ y) / 8 < m) cmp = x < y ? -1 : 1;
        break;
      }
    }
    if (TERN_UNLIKELY(cmp >= 0)) return corrupt(b, "restart keys not ascending");
  }
  uint32_t cp = b->cp;
  copy_shared(dst, prev, cp, 0);
  dst += cp;
  for (uint32_t i = 0; i < klen; i += 8) { /* the room covers the overrun */
    uint8_t v[8];
    memcpy(v, page + lo + i, 8);
    memcpy(dst + i, v, 8);
  }
  *len = cp + klen;
  return TERN_OK;
}

/* tern_tb_iter_keys's loop for a block with the pair table and g
 * characters a code (constant when inlined): e from its entry to end. */
static inline __attribute__((always_inline)) int keys_pairs(const tern_tb_block *b, tern_tb_iter *it,
                                                            uint8_t *term, tern_tb_keys *k,
                                                            uint32_t end, uint32_t g, int fixed) {
  scan_consts sc;
  scan_consts_of(b, &sc, k->pad);
  uint32_t first = it->entry, kpos = it->kpos, len = it->len, j = 0, n = end - first;
  if (TERN_UNLIKELY(kpos > sc.tails_start)) /* scan_read's bound, once a batch */
    return corrupt(b, "key past the end of the key stream");
  uint32_t pmask = (1u << sc.bw_plen) - 1, smask = (1u << sc.bw_slen) - 1;
  uint32_t hb = sc.bw_plen + sc.bw_slen; /* sc.bw_slen is 0 when fixed: h is the prefix alone */
  if (fixed) pmask = ~0u;
  uint32_t r = (first + b->restart - 1) / b->restart;
  uint32_t jnext = r * b->restart - first; /* the next restart, from the batch's first */
  /* The term before the batch's first, copied in front of it: every term
   * then shares from bytes of the batch (copy_shared's overrun stays in).
   * The previous term always ends where the next one goes (at used), so
   * it is at k->bytes + used - len: no pointer to keep. */
  memcpy(k->bytes, term, len);
  uint32_t used = len;
  if (fixed) { /* every entry adds sc.fixed bytes: the fill bounds the count */
    uint32_t fit = (TERN_TB_KEYS_FILL - used + sc.fixed - 1) / sc.fixed;
    if (n > fit) n = fit;
  }
  while (j < n && (fixed || used < TERN_TB_KEYS_FILL)) {
    if (TERN_UNLIKELY(j == jnext)) {
      TERN_TRY(batch_restart(b, sc.page, r++, kpos, k->bytes + used, k->bytes + used - len, &len));
      jnext += b->restart;
      k->off[j] = (uint16_t)used;
      k->len[j] = (uint16_t)len;
      k->kend[j] = (uint16_t)kpos;
      used += len;
      j++;
      continue;
    }
    /* The entries before the next restart: a loop that calls nothing
     * (restart_term's call, inside it, made the compiler keep its values
     * on the stack; one loop for both kinds of entry, with batch_restart
     * inline, costs more still). */
    uint32_t stop = jnext < n ? jnext : n;
    for (; j < stop && (fixed || used < TERN_TB_KEYS_FILL); j++) {
      uint8_t *dst = k->bytes + used;
      uint32_t h = (uint32_t)scan_read(sc.page, kpos, hb); /* kpos <= tails_start */
      uint32_t p = sc.cp + (h & pmask), slen;
      kpos += hb;
      if (TERN_UNLIKELY(p > len))
        return corrupt(b, "entry shares more than the previous term holds");
      if (fixed) { /* the loop made for blocks of one term length: no suffix lengths */
        if (TERN_UNLIKELY(p >= sc.fixed)) return corrupt(b, "entry suffix empty");
        slen = sc.fixed - p;
      } else {
        slen = (h >> sc.bw_plen) & smask;
        if (TERN_UNLIKELY(slen == 0 || p + slen > TERN_TB_TERM_MAX))
          return corrupt(b, "bad entry suffix length");
      }
      copy_shared(dst, dst - len, p, 0);
      int bad = 0;
      kpos = scan_suffix(&sc, kpos, slen, dst + p, g, &bad);
      if (TERN_UNLIKELY(bad))
        return corrupt(b, bad == 2 ? "key past the end of the key stream"
                                   : "character outside the block alphabet");
      len = p + slen;
      k->off[j] = (uint16_t)used;
      k->len[j] = (uint16_t)len;
      k->kend[j] = (uint16_t)kpos;
      used += len;
    }
  }
  return keys_end(b, it, term, k, first + j, j, kpos, len, k->bytes + used - len);
}

int tern_tb_iter_keys(const tern_tb_block *b, tern_tb_iter *it, uint8_t *term, tern_tb_keys *k,
                      uint32_t want) {
  assert(want >= 1 && want <= TERN_TB_KEYS_MAX);
  uint32_t e = it->entry;
  k->first = e;
  k->n = 0;
  k->tails = 0;
  if (e >= b->n) return TERN_NOTFOUND;
  if (TERN_UNLIKELY(!b->tables))
    return tern_fail(TERN_EINVAL, "terms block: decoding without tern_tb_tables");
  uint32_t end = b->n - e < want ? b->n : e + want;
  if (b->pair && b->group >= 2) {
    /* A loop made for each group size, and for one term length or coded lengths. */
    switch (2 * b->group + (b->fixed_len != 0)) {
    case 4: return keys_pairs(b, it, term, k, end, 2, 0);
    case 5: return keys_pairs(b, it, term, k, end, 2, 1);
    case 6: return keys_pairs(b, it, term, k, end, 3, 0);
    case 7: return keys_pairs(b, it, term, k, end, 3, 1);
    case 8: return keys_pairs(b, it, term, k, end, 4, 0);
    case 9: return keys_pairs(b, it, term, k, end, 4, 1);
    case 10: return keys_pairs(b, it, term, k, end, 5, 0);
    case 11: return keys_pairs(b, it, term, k, end, 5, 1);
    case 12: return keys_pairs(b, it, term, k, end, 6, 0);
    default: return keys_pairs(b, it, term, k, end, 6, 1);
    }
  }
  uint32_t rmask = b->restart - 1, pow2 = (b->restart & rmask) == 0;
  uint32_t kpos = it->kpos, len = it->len, used = 0, j = 0;
  const uint8_t *prev = term;
  for (; e < end && used < TERN_TB_KEYS_FILL; e++, j++) {
    uint8_t *dst = k->bytes + used;
    if (pow2 ? (e & rmask) == 0 : e % b->restart == 0)
      TERN_TRY(tern_tb_restart_term(b, e / b->restart, kpos, dst, &len, NULL));
    else
      TERN_TRY(batch_term(b, &kpos, &len, prev, dst, TERN_TB_KEYS_ROOM - used, j == 0));
    k->off[j] = (uint16_t)used;
    k->len[j] = (uint16_t)len;
    k->kend[j] = (uint16_t)kpos;
    prev = dst;
    used += len;
  }
  return keys_end(b, it, term, k, e, j, kpos, len, prev);
}

int tern_tb_iter_tail(const tern_tb_block *b, tern_tb_iter *it, tern_tb_tail *t) {
  uint32_t e = it->entry, rmask = b->restart - 1;
  if (e >= b->n) return TERN_NOTFOUND;
  if (TERN_UNLIKELY((b->restart & rmask) == 0 ? (e & rmask) == 0 : e % b->restart == 0)) {
    uint32_t rk, rt;
    TERN_TRY(restart_pos(b, e / b->restart, &rk, &rt));
    if (rt != it->pos) return corrupt(b, "restart position differs from the stream");
  }
  if (TERN_LIKELY(one_doc(b)))
    TERN_TRY(decode_one_doc(b, &it->pos, e, t));
  else
    TERN_TRY(tail_decode(b, &it->pos, e, t));
  it->entry = e + 1;
  return TERN_OK;
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

/* tern_tb_iter_seek from where `it` stands instead of from the restart,
 * when entry index is in the run of the entry just decoded: the entries
 * between are walked by their lengths alone, and only the characters that
 * survive into the term before index are decoded — the bytes the term
 * already holds from the entry just decoded stay as they are. */
/* Walks the n - 1 entries after one of length *len whose successor's
 * key starts at bit *pos, by their lengths alone (prefix, suffix length,
 * suffix widths): the suffix position, shared prefix and suffix length of
 * each (entries 1 .. n-1).  Leaves *pos and *len after the last. */
static int walk_lengths(const tern_tb_block *b, uint32_t n, uint32_t *pos, uint32_t *len,
                        uint32_t *sp, uint32_t *pl, uint32_t *sl) {
  /* The block's constants as locals (the stores into sp, pl, sl may
   * alias b), and an entry's two lengths as one read. */
  const uint8_t *page = b->page;
  const uint16_t *sbits = b->sbits;
  uint32_t cp = b->cp, fixed = b->fixed_len, ends = b->tails_start;
  uint32_t bw_plen = b->bw_plen, bw_slen = fixed ? 0 : b->bw_slen, hb = bw_plen + bw_slen;
  uint32_t pmask = (1u << bw_plen) - 1, smask = (1u << bw_slen) - 1;
  uint32_t at = *pos, l = *len;
  for (uint32_t k = 1; k < n; k++) {
    uint32_t p = 0, s = 0; /* set by entry_lengths when it returns TERN_OK */
    TERN_TRY(entry_lengths(b, page, at, l, cp, fixed, bw_plen, hb, pmask, smask, &p, &s));
    at += hb;
    sp[k] = at;
    pl[k] = p;
    sl[k] = s;
    at += TERN_LIKELY(s < TERN_TB_SBITS) ? sbits[s] : suffix_bits_of(s, b->gdiv, b->group, b->gbits);
    l = p + s;
    if (TERN_UNLIKELY(at > ends)) return corrupt(b, "key past the end of the key stream");
  }
  *pos = at;
  *len = l;
  return TERN_OK;
}

/* Assembles into term, backwards, the bytes [floor, *need) the entry
 * after the walk shares with the walk's last: each walked entry k >= 1
 * supplies those past its own shared prefix that no later entry
 * replaced.  Leaves in *need what entry 0 must supply (<= floor: none). */
static int assemble_shared(const tern_tb_block *b, uint32_t n, uint32_t floor, const uint32_t *sp,
                           const uint32_t *pl, const uint32_t *sl, uint8_t *term,
                           uint32_t *need) {
  uint8_t tmp[TERN_TB_TERM_MAX + TERN_TB_GROUP_MAX];
  for (uint32_t k = n; k-- > 1 && *need > floor;) {
    if (pl[k] >= *need) continue;
    uint32_t m = *need - pl[k];
    uint32_t whole = (m + b->group - 1) / b->group * b->group;
    TERN_TRY(tern_tb_decode_suffix(b, sp[k], whole < sl[k] ? whole : sl[k], tmp));
    memcpy(term + pl[k], tmp, m);
    *need = pl[k];
  }
  return TERN_OK;
}

static int iter_skip(const tern_tb_block *b, tern_tb_iter *it, uint32_t index, uint8_t *term) {
  uint32_t n = index - it->entry + 1; /* entry 0 of the walk: the term in `term` */
  uint32_t sp[256], pl[256], sl[256]; /* n <= restart interval <= 255 */
  uint32_t len = it->len, pos = it->kpos;
  TERN_TRY(walk_lengths(b, n, &pos, &len, sp, pl, sl));
  uint32_t need, peek = pos, slen;
  TERN_TRY(read_prefix(b, &peek, len, &need, &slen));
  TERN_TRY(assemble_shared(b, n, 0, sp, pl, sl, term, &need));
  uint32_t tpos = it->pos;
  if (TERN_LIKELY(b->tail_bits >= 0))
    tpos = b->tails_start + index * (uint32_t)b->tail_bits;
  else
    for (uint32_t k = it->entry; k < index && tpos <= b->used_bits; k++) tpos = skip_tail(b, tpos);
  if (TERN_UNLIKELY(tpos > b->used_bits)) return corrupt(b, "entry past the end of the block");
  it->pos = tpos;
  it->entry = index;
  it->kpos = pos;
  it->len = len;
  return TERN_OK;
}

int tern_tb_iter_seek_from(const tern_tb_block *b, tern_tb_iter *it, uint32_t index,
                           uint8_t *term) {
  uint32_t e = it->entry;
  if (index >= e && e > 0 && e < b->n && index < b->n && e % b->restart != 0 &&
      index / b->restart == e / b->restart && it->len <= TERN_TB_TERM_MAX)
    return iter_skip(b, it, index, term);
  return tern_tb_iter_seek(b, it, index, term);
}

/* Skipping to an entry decodes only the characters that survive in the
 * term before it: the entries from the restart are walked by their
 * lengths alone (prefix, suffix length, suffix widths), then the bytes
 * entry `index` shares with the one before it are assembled backwards,
 * each entry supplying those past its own shared prefix that no later
 * entry replaced — typically one suffix's first characters instead of
 * half a restart interval of whole suffixes.  term[] then holds what the
 * next tern_tb_iter_next needs, not the whole previous term. */
int tern_tb_iter_seek(const tern_tb_block *b, tern_tb_iter *it, uint32_t index, uint8_t *term) {
  if (index >= b->n) return corrupt(b, "entry out of range");
  uint32_t r = index / b->restart;
  TERN_TRY(tern_tb_iter_restart(b, it, r, term));
  uint32_t n = index - it->entry;
  if (n == 0) return TERN_OK;
  const uint8_t *rk;
  uint32_t rlen, pos = it->kpos;
  TERN_TRY(restart_key(b, r, &rk, &rlen));
  uint32_t sp[256], pl[256], sl[256]; /* n < restart interval <= 255 */
  uint32_t len = b->cp + rlen;
  pl[0] = b->cp;
  sl[0] = rlen;
  TERN_TRY(walk_lengths(b, n, &pos, &len, sp, pl, sl));
  /* Entry `index` keeps only the bytes it shares with entry index-1. */
  uint32_t need, peek = pos, slen;
  TERN_TRY(read_prefix(b, &peek, len, &need, &slen));
  TERN_TRY(assemble_shared(b, n, b->cp, sp, pl, sl, term, &need));
  if (need > b->cp) memcpy(term + b->cp, rk, need - b->cp); /* the rest from the restart key */
  TERN_TRY(tail_pos(b, index, r, it->pos, &it->pos));
  it->entry = index;
  it->kpos = pos;
  it->len = len;
  return TERN_OK;
}

/* ------------------------------------------------------ resolving ranks */

/* Entry e's tail at bit pos into *hit, as a primary key's is read; *after:
 * the bit after it.  one: the block is one_doc (every tail a pulsed doc
 * and an inline value of one length). */
static inline __attribute__((always_inline)) int hit_tail(const tern_tb_block *b, uint32_t pos,
                                                          uint32_t e, int one, tern_tb_hit *hit,
                                                          uint32_t *after) {
  if (TERN_LIKELY(one)) {
    int64_t d = b->doc_base + (int64_t)get_col(b, pos, b->bw_doc) + e;
    if (TERN_UNLIKELY(d < 0 || d >= (int64_t)b->f.max_doc)) return corrupt(b, "doc id out of range");
    pos += b->bw_doc;
    hit->doc = (uint32_t)d;
    hit->flags = 0;
    hit->vlen = hit->vbit = 0;
    if (b->f.has_values) {
      hit->flags = TERN_TB_HIT_VINLINE;
      hit->vlen = b->vlen_min;
      hit->vbit = pos;
      pos += 8 * b->vlen_min;
    }
    if (TERN_UNLIKELY(pos > b->used_bits)) return corrupt(b, "entry past the end of the block");
    *after = pos;
    return TERN_OK;
  }
  uint32_t docs[TERN_TB_DOCS_MAX];
  tern_tb_tail t = {.docs = docs};
  TERN_TRY(tern_tb_decode_tail(b, &pos, e, &t));
  hit->doc = t.pulsed ? docs[0] : 0;
  hit->flags = (t.vinline ? TERN_TB_HIT_VINLINE : 0) | (t.pulsed ? 0 : TERN_TB_HIT_POSTINGS);
  hit->vlen = t.vlen;
  hit->vbit = t.vbit;
  hit->voff = t.voff;
  hit->df = t.df;
  hit->post_off = t.post_off;
  hit->post_len = t.post_len;
  *after = pos;
  return TERN_OK;
}

/* The tail position of entry t, stepping from tpos, the tail of entry
 * `from` (tails of varying width; uniform ones are found directly). */
static inline int hit_tail_pos(const tern_tb_block *b, uint32_t from, uint32_t t, uint32_t tpos,
                               uint32_t *at) {
  if (TERN_LIKELY(b->tail_bits >= 0))
    tpos = b->tails_start + t * (uint32_t)b->tail_bits;
  else
    for (uint32_t k = from; k < t && tpos <= b->used_bits; k++) tpos = skip_tail(b, tpos);
  if (TERN_UNLIKELY(tpos > b->used_bits)) return corrupt(b, "entry past the end of the block");
  *at = tpos;
  return TERN_OK;
}

/* Resolves entry t into dst (room bytes writable there), walking from
 * `it` (the term before it->entry at prev, when it stands past a restart
 * below t's run); `it` then stands after t. */
static inline __attribute__((always_inline)) int resolve_one(const tern_tb_block *b,
                                                             tern_tb_iter *it, const uint8_t *prev,
                                                             uint32_t t, uint8_t *dst,
                                                             uint32_t room, int one,
                                                             tern_tb_hit *hit) {
  uint32_t sp[256], pl[256], sl[256]; /* a walk stays in one run: <= 255 entries */
  uint32_t rmask = b->restart - 1;
  uint32_t r = (b->restart & rmask) == 0 ? t >> __builtin_ctz(b->restart) : t / b->restart;
  uint32_t rs = r * b->restart, kpos, tpos, len, from, fromt;
  if (rs >= it->entry) { /* from t's restart: its term whole, in dst */
    const uint8_t *rk;
    uint32_t rlen;
    TERN_TRY(restart_key(b, r, &rk, &rlen));
    TERN_TRY(restart_pos(b, r, &kpos, &tpos));
    memcpy(dst, b->prefix, b->cp);
    memcpy(dst + b->cp, rk, rlen);
    len = b->cp + rlen;
    from = rs;
    fromt = rs;
    prev = NULL;
    if (t == rs) {
      TERN_TRY(hit_tail_pos(b, rs, t, tpos, &tpos));
      goto tail;
    }
  } else { /* in the run of the entry last resolved: from it */
    kpos = it->kpos;
    tpos = it->pos;
    len = it->len;
    from = it->entry - 1;
    fromt = it->entry;
  }
  uint32_t n = t - from, p, slen;
  TERN_TRY(walk_lengths(b, n, &kpos, &len, sp, pl, sl));
  TERN_TRY(read_prefix(b, &kpos, len, &p, &slen));
  if (prev) copy_shared(dst, prev, p, 0);
  uint32_t need = p;
  TERN_TRY(assemble_shared(b, n, 0, sp, pl, sl, dst, &need));
  if (TERN_UNLIKELY(room < p + slen + 8)) return corrupt(b, "term too long");
  TERN_TRY(b->pair ? suffix_pairs(b, kpos, slen, dst + p, room - p)
                   : tern_tb_decode_suffix(b, kpos, slen, dst + p));
  kpos += suffix_bits(b, slen);
  len = p + slen;
  if (TERN_UNLIKELY(kpos > b->tails_start)) return corrupt(b, "key past the end of the key stream");
  TERN_TRY(hit_tail_pos(b, fromt, t, tpos, &tpos));
tail:
  TERN_TRY(hit_tail(b, tpos, t, one, hit, &it->pos));
  it->entry = t + 1;
  it->kpos = kpos;
  it->len = len;
  if (it->entry == b->n && (kpos + 7) / 8 * 8 != b->tails_start)
    return corrupt(b, "key stream length differs from its entries");
  return TERN_OK;
}

static int resolve_pairs_g(const tern_tb_block *b, tern_tb_iter *it, tern_tb_hits *h,
                           const uint32_t *ids, uint32_t n, uint64_t base, uint32_t *done);

int tern_tb_resolve(const tern_tb_block *b, tern_tb_iter *it, tern_tb_hits *h, const uint32_t *ids,
                    uint32_t n, uint64_t base, uint32_t *done) {
  *done = 0;
  h->n = 0;
  h->direct = 0;
  if (TERN_UNLIKELY(!b->tables))
    return tern_fail(TERN_EINVAL, "terms block: decoding without tern_tb_tables");
  if (n > TERN_TB_HITS_MAX) n = TERN_TB_HITS_MAX;
  if (b->pair && b->group >= 2) return resolve_pairs_g(b, it, h, ids, n, base, done);
  uint32_t used = 0, prev = 0;
  if (it->entry > 0) { /* the term before it->entry, to the front */
    assert(it->len <= TERN_TB_TERM_MAX);
    memmove(h->bytes, h->bytes + h->prev, it->len);
    used = it->len;
  }
  const int one = one_doc(b);
  uint32_t j = 0;
  for (; j < n && used < TERN_TB_HITS_FILL; j++) {
    if (ids[j] < base || ids[j] - base >= b->n) break; /* in a later block */
    uint32_t t = (uint32_t)(ids[j] - base);
    if (TERN_UNLIKELY(t < it->entry))
      return tern_fail(TERN_EINVAL, "%s: terms block %llu: entry %u to resolve at entry %u of %u",
                       b->what, (unsigned long long)b->block_no, t, it->entry, b->n);
    tern_tb_hit *hit = &h->hit[j];
    const uint8_t *pv = it->entry > 0 ? h->bytes + prev : NULL;
    TERN_TRY(resolve_one(b, it, pv, t, h->bytes + used, TERN_TB_HITS_ROOM - used, one, hit));
    hit->off = (uint16_t)used;
    hit->len = (uint16_t)it->len;
    prev = used;
    used += it->len;
    h->n = j + 1;
    h->prev = prev;
  }
  h->direct = 0;
  *done = j;
  return TERN_OK;
}

/* len bytes from src (in the page, at byte `from`) to dst, which has room
 * for 16 past them: 16 at a time while the page has them, else memcpy. */
static inline void page_copy(uint8_t *dst, const uint8_t *page, uint32_t from, uint32_t len) {
  if (TERN_LIKELY(len <= 16 && from + 16 <= TERN_TB_PAGE)) {
    memcpy(dst, page + from, 16);
    return;
  }
  if (TERN_LIKELY(from + ((len + 15) & ~15u) <= TERN_TB_PAGE)) {
    for (uint32_t i = 0; i < len; i += 16) memcpy(dst + i, page + from + i, 16);
    return;
  }
  memcpy(dst, page + from, len);
}

/* The low k bytes of w (k <= 8) at p, the rest of p's 8 bytes kept. */
static inline void put_low(uint8_t *p, uint64_t w, uint32_t k) {
  uint64_t old, mask = k >= 8 ? ~(uint64_t)0 : (((uint64_t)1 << (8 * k)) - 1);
  memcpy(&old, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  old = __builtin_bswap64(old);
#endif
  scan_store(p, (w & mask) | (old & ~mask));
}

/* The first m characters of a suffix of slen (m <= slen) at bit sp into
 * out, exactly (no byte past them written), with the pair table: the
 * characters a walked entry leaves in the term resolved after it.  g
 * constant when inlined; *bad set when a code is outside the alphabet. */
static inline __attribute__((always_inline)) void first_chars(const scan_consts *sc, uint32_t sp,
                                                              uint32_t slen, uint32_t m,
                                                              uint8_t *out, uint32_t g, int *bad) {
  for (uint32_t i = 0; i < m; i += g, sp += sc->gb, out += g) {
    uint64_t w;
    if (TERN_LIKELY(i + g <= slen)) {
      uint32_t code = (uint32_t)scan_read(sc->page, sp, sc->gb);
      if (TERN_UNLIKELY(code > sc->powg)) {
        *bad = 1;
        return;
      }
      w = code_word(sc, code, g);
    } else { /* the suffix's last, shorter code */
      uint32_t r = slen - i, code = (uint32_t)(scan_read(sc->page, sp, 32) & sc->rmask[r]);
      if (TERN_UNLIKELY(code >= sc->pow[r])) {
        *bad = 1;
        return;
      }
      w = code_word(sc, code, g) >> (8 * (g - r));
    }
    put_low(out, w, m - i < g ? m - i : g);
  }
}

/* What restart_at reads of a block, as locals: the terms the walk writes
 * may alias any memory, so fields read through the block would be read
 * again after each. */
typedef struct restart_consts {
  const uint8_t *rkey, *rkpos, *rtpos;
  uint32_t cp, fixed, keys_start, tails_start, used_bits;
} restart_consts;

static inline void restart_consts_of(const tern_tb_block *b, restart_consts *rc) {
  *rc = (restart_consts){b->rkey,      b->rkpos,      b->rtpos,       b->cp,
                         b->fixed_len, b->keys_start, b->tails_start, b->used_bits};
}

/* Restart r's key (rlen bytes at page byte *from) and where its run goes
 * on in the key stream (*kpos) and, tails of varying width, where its
 * tail is (*tpos): restart_span's and restart_pos's checks, their
 * conditions or'ed into one branch (the walk pays them per hit). */
static inline __attribute__((always_inline)) int restart_at(const tern_tb_block *b,
                                                            const restart_consts *k, uint32_t r,
                                                            uint32_t *from, uint32_t *rlen,
                                                            uint32_t *kpos, uint32_t *tpos) {
  uint32_t lo = tern_load16(k->rkey + 2 * r), to = tern_load16(k->rkey + 2 * r + 2);
  uint32_t len = to - lo, full = k->cp + len;
  uint32_t kp = r ? tern_load16(k->rkpos + 2 * (r - 1)) : k->keys_start;
  unsigned bad = (to < lo) | (8 * to > k->keys_start) | (full > TERN_TB_TERM_MAX) |
                 (k->fixed != 0 && full != k->fixed) | (r > 0 && len == 0) |
                 (kp - k->keys_start > k->tails_start - k->keys_start);
  *tpos = k->tails_start;
  if (TERN_UNLIKELY(k->rtpos != NULL) && r > 0) {
    *tpos = tern_load16(k->rtpos + 2 * (r - 1));
    bad |= (*tpos < k->tails_start) | (*tpos > k->used_bits);
  }
  *from = *rlen = *kpos = 0;
  if (TERN_UNLIKELY(bad)) return corrupt(b, "bad restart key or position");
  *from = lo;
  *rlen = len;
  *kpos = kp;
  return TERN_OK;
}

/* A suffix scan_suffix or first_chars found bad: out of line, so that
 * the hot loop does not choose the message before it knows. */
static __attribute__((cold, noinline)) int bad_suffix(const tern_tb_block *b, int bad) {
  return corrupt(b, bad == 2 ? "key past the end of the key stream"
                             : "character outside the block alphabet");
}

/* The block's constants resolve_pairs works with, as locals: the terms
 * it writes may alias any memory, so fields read through the block would
 * be read again after each. */
typedef struct resolve_consts {
  scan_consts sc; /* sc.page for scan_read: every suffix read ends by `ends` */
  restart_consts rk;
  const uint8_t *page;
  const uint16_t *sbits;
  uint32_t cp, fixed, ends, count, bw_plen, hb, pmask, smask, pfrom;
  uint32_t R, pow2, rsh; /* the restart interval, a power of two?, its log */
  int one;               /* one_doc */
  /* A primary key's tails (one doc, its id its ordinal's, and an inline
   * value of one length) at fixed places, every one checked at once:
   * entry t's doc is doc_base + t, its value of dvlen bytes at bit
   * ends + t * tb (dflags). */
  int direct;
  uint32_t tb, dflags, dvlen;
  int64_t doc_base;
  /* Terms of one length: an entry's step over its key, by its shared
   * prefix's code alone (hb + the suffix's bits); a code that makes the
   * prefix reach the length (or pass it) steps past the key stream, so
   * the walk's one check (at > ends) catches it. */
  int fixed_walk;
  uint32_t adv[64];
} resolve_consts;

static inline __attribute__((always_inline)) void resolve_consts_of(const tern_tb_block *b,
                                                                    resolve_consts *x,
                                                                    uint8_t *pad, uint32_t g) {
  scan_consts_of(b, &x->sc, pad);
  restart_consts_of(b, &x->rk);
  x->page = b->page;
  x->sbits = b->sbits;
  x->cp = b->cp;
  x->fixed = b->fixed_len;
  x->ends = b->tails_start;
  x->count = b->n;
  uint32_t bw_plen = b->bw_plen, bw_slen = x->fixed ? 0 : b->bw_slen;
  x->bw_plen = bw_plen;
  x->hb = bw_plen + bw_slen;
  x->pmask = (1u << bw_plen) - 1;
  x->smask = (1u << bw_slen) - 1;
  x->pfrom = (uint32_t)(b->prefix - b->page);
  x->R = b->restart;
  x->pow2 = (x->R & (x->R - 1)) == 0;
  x->rsh = (uint32_t)__builtin_ctz(x->R);
  x->one = one_doc(b);
  x->tb = (uint32_t)b->tail_bits;
  x->direct = x->one && b->bw_doc == 0 && b->doc_base >= 0 &&
              b->doc_base + (int64_t)x->count <= (int64_t)b->f.max_doc &&
              (uint64_t)b->tails_start + (uint64_t)x->count * x->tb <= b->used_bits;
  x->dflags = b->f.has_values ? TERN_TB_HIT_VINLINE : 0;
  x->dvlen = b->f.has_values ? b->vlen_min : 0;
  x->doc_base = b->doc_base;
  x->fixed_walk = x->fixed && bw_plen <= 6 && x->fixed <= TERN_TB_TERM_MAX;
  if (x->fixed_walk)
    for (uint32_t c = 0; c <= x->pmask; c++)
      x->adv[c] = x->cp + c < x->fixed
                      ? x->hb + suffix_bits_of(x->fixed - x->cp - c, b->gdiv, g, x->sc.gbits)
                      : 16u * TERN_TB_PAGE;
}

/* A walk's entries 1 .. nw (the first after the term it starts from,
 * *l bytes, at bit *at of the key stream) by their lengths: where each
 * one's suffix starts (sp[k]), the bytes it shares (pl[k]) and its
 * suffix's length (sl[k]; not kept when terms have one length).  *at,
 * *l, *p and *s end as the last one's: the bit after it, its length, its
 * shared bytes and its suffix's length. */
static inline __attribute__((always_inline)) int walk_run(const tern_tb_block *b,
                                                          const resolve_consts *x, uint32_t nw,
                                                          uint32_t *at, uint32_t *l, uint32_t *p,
                                                          uint32_t *s, uint32_t *sp, uint32_t *pl,
                                                          uint32_t *sl, uint32_t g) {
  uint32_t a = *at;
  if (x->fixed_walk) {
    if (TERN_UNLIKELY(*l != x->fixed)) return corrupt(b, "term of another length");
    for (uint32_t k = 1; k <= nw; k++) {
      uint32_t byte = a >> 3;
      uint64_t v = TERN_LIKELY(byte <= TERN_TB_PAGE - 8) ? tern_bits_le64(x->page + byte)
                                                         : tail64(x->page, byte);
      uint32_t c = (uint32_t)(v >> (a & 7)) & x->pmask;
      sp[k] = a + x->hb;
      pl[k] = x->cp + c;
      a += x->adv[c];
      if (TERN_UNLIKELY(a > x->ends)) return corrupt(b, "bad entry prefix, or key past the end");
    }
    *p = pl[nw];
    *s = x->fixed - *p;
    *l = x->fixed;
  } else {
    uint32_t len = *l;
    for (uint32_t k = 1; k <= nw; k++) {
      TERN_TRY(entry_lengths(b, x->page, a, len, x->cp, x->fixed, x->bw_plen, x->hb, x->pmask,
                             x->smask, p, s));
      a += x->hb;
      sp[k] = a;
      pl[k] = *p;
      sl[k] = *s;
      a += TERN_LIKELY(*s < TERN_TB_SBITS) ? x->sbits[*s]
                                            : suffix_bits_of(*s, b->gdiv, g, x->sc.gbits);
      len = *p + *s;
      if (TERN_UNLIKELY(a > x->ends)) return corrupt(b, "key past the end of the key stream");
    }
    *l = len;
  }
  *at = a;
  return TERN_OK;
}

/* The walk's last entry (nw: it shares p bytes and adds a suffix of s)
 * into dst: its first p bytes from the term walked from — whole at prev
 * (the previous hit's), or from the restart (the block prefix, then its
 * key of rlen bytes at page byte rfrom) — then those each walked entry
 * supplied that no later one replaced, then its suffix. */
static inline __attribute__((always_inline)) int assemble_term(
    const tern_tb_block *b, const resolve_consts *x, uint8_t *dst, const uint8_t *prev,
    uint32_t rfrom, uint32_t rlen, uint32_t nw, uint32_t p, uint32_t s, const uint32_t *sp,
    const uint32_t *pl, const uint32_t *sl, uint32_t g) {
  if (prev) {
    copy_shared(dst, prev, p, 0);
  } else {
    uint32_t q = p < x->cp + rlen ? p : x->cp + rlen;
    page_copy(dst, x->page, x->pfrom, q < x->cp ? q : x->cp);
    if (q > x->cp) page_copy(dst + x->cp, x->page, rfrom, q - x->cp);
  }
  int bad = 0;
  for (uint32_t k = nw - 1, need = p; k >= 1 && need > 0; k--) {
    if (pl[k] >= need) continue;
    first_chars(&x->sc, sp[k], x->fixed_walk ? x->fixed - pl[k] : sl[k], need - pl[k], dst + pl[k],
                g, &bad);
    need = pl[k];
  }
  (void)scan_suffix(&x->sc, sp[nw], s, dst + p, g, &bad);
  if (TERN_UNLIKELY(bad)) return bad_suffix(b, bad);
  return TERN_OK;
}

/* Entry t's tail at its fixed place, in a block whose tails are all
 * checked at once (resolve_consts.direct); *after: the bit after it. */
static inline __attribute__((always_inline)) void hit_direct(const resolve_consts *x, uint32_t t,
                                                             tern_tb_hit *hit, uint32_t *after) {
  hit->doc = (uint32_t)(x->doc_base + t);
  hit->flags = x->dflags;
  hit->vlen = x->dvlen;
  hit->vbit = x->ends + t * x->tb;
  *after = hit->vbit + x->tb;
}

/* Entry t's tail into *hit, *after the bit after it, in any other block:
 * from tpos, the tail of entry tfrom, walked to t's. */
static inline __attribute__((always_inline)) int hit_walked(const tern_tb_block *b,
                                                            const resolve_consts *x, uint32_t t,
                                                            uint32_t tpos, uint32_t tfrom,
                                                            tern_tb_hit *hit, uint32_t *after) {
  if (TERN_LIKELY(b->tail_bits >= 0))
    tpos = x->ends + t * x->tb;
  else
    for (uint32_t k = tfrom; k < t && tpos <= b->used_bits; k++) tpos = skip_tail(b, tpos);
  if (TERN_UNLIKELY(tpos > b->used_bits)) return corrupt(b, "entry past the end of the block");
  return hit_tail(b, tpos, t, x->one, hit, after);
}

/* tern_tb_resolve for a block with the pair table, g characters a code
 * (constant when inlined): the block's constants in locals, each hit's
 * term walked to from its restart or from the hit before it in the same
 * run (walk_run), assembled (assemble_term), its tail read (hit_direct,
 * hit_walked), no
 * call. */
static inline __attribute__((always_inline)) int resolve_pairs(const tern_tb_block *b,
                                                               tern_tb_iter *it, tern_tb_hits *h,
                                                               const uint32_t *ids, uint32_t n,
                                                               uint64_t base, uint32_t *done,
                                                               uint32_t g) {
  resolve_consts x;
  resolve_consts_of(b, &x, h->pad, g);
  uint32_t sp[256], pl[256], sl[256]; /* a walk stays in one run: <= 255 entries */
  uint32_t used = 0, prev = 0, j = 0;
  tern_tb_iter w = *it; /* in registers: the terms written may alias *it */
  if (w.entry > 0) { /* the term before w.entry, to the front */
    assert(w.len <= TERN_TB_TERM_MAX);
    memmove(h->bytes, h->bytes + h->prev, w.len);
    h->prev = 0;
    used = w.len;
  }
  for (; j < n && used < TERN_TB_HITS_FILL; j++) {
    if ((uint64_t)ids[j] - base >= x.count) break; /* in another block (below base: wraps) */
    uint32_t t = (uint32_t)(ids[j] - base);
    if (TERN_UNLIKELY(t < w.entry))
      return tern_fail(TERN_EINVAL, "%s: terms block %llu: entry %u to resolve at entry %u of %u",
                       b->what, (unsigned long long)b->block_no, t, w.entry, x.count);
    uint8_t *dst = h->bytes + used;
    uint32_t r = x.pow2 ? t >> x.rsh : t / x.R, rs = r * x.R, kpos, tpos, len, from, tfrom;
    int restart = rs >= w.entry;
    uint32_t rfrom = 0, rlen = 0;
    if (restart) { /* from t's restart (its bytes copied as far as t needs them) */
      TERN_TRY(restart_at(b, &x.rk, r, &rfrom, &rlen, &kpos, &tpos));
      len = x.cp + rlen;
      from = tfrom = rs;
      if (t == rs) {
        page_copy(dst, x.page, x.pfrom, x.cp);
        page_copy(dst + x.cp, x.page, rfrom, rlen);
      }
    } else { /* in the run of the entry last resolved: from it */
      kpos = w.kpos;
      tpos = w.pos;
      len = w.len;
      from = w.entry - 1;
      tfrom = w.entry;
    }
    if (t != from || !restart) { /* the entries from + 1 .. t by their lengths; t's suffix then */
      uint32_t nw = t - from, p = 0, s = 0;
      TERN_TRY(walk_run(b, &x, nw, &kpos, &len, &p, &s, sp, pl, sl, g));
      TERN_TRY(assemble_term(b, &x, dst, restart ? NULL : h->bytes + prev, rfrom, rlen, nw, p, s,
                             sp, pl, sl, g));
    }
    tern_tb_hit *hit = &h->hit[j];
    if (TERN_LIKELY(x.direct))
      hit_direct(&x, t, hit, &w.pos);
    else
      TERN_TRY(hit_walked(b, &x, t, tpos, tfrom, hit, &w.pos));
    w.entry = t + 1;
    w.kpos = kpos;
    w.len = len;
    if (TERN_UNLIKELY(t + 1 == x.count && (kpos + 7) / 8 * 8 != x.ends))
      return corrupt(b, "key stream length differs from its entries");
    hit->off = (uint16_t)used;
    hit->len = (uint16_t)len;
    prev = used;
    used += len;
  }
  *it = w;
  h->n = j;
  h->prev = prev;
  h->direct = x.direct;
  *done = j;
  return TERN_OK;
}

/* resolve_pairs made for each group size. */
static int resolve_pairs_g(const tern_tb_block *b, tern_tb_iter *it, tern_tb_hits *h,
                           const uint32_t *ids, uint32_t n, uint64_t base, uint32_t *done) {
  switch (b->group) {
  case 2: return resolve_pairs(b, it, h, ids, n, base, done, 2);
  case 3: return resolve_pairs(b, it, h, ids, n, base, done, 3);
  case 4: return resolve_pairs(b, it, h, ids, n, base, done, 4);
  case 5: return resolve_pairs(b, it, h, ids, n, base, done, 5);
  default: return resolve_pairs(b, it, h, ids, n, base, done, 6);
  }
}
