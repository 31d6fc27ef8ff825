/* SPDX-License-Identifier: MIT */
/*
 * terms_block_hits.c — the terms of chosen entries of a terms block, in
 * ascending order: a term's hits, whose doc ids are ranks of the unique
 * field, resolved to their keys (tern_tb_resolve).  Each hit's term is
 * walked to from its restart or from the hit before it in the same run,
 * decoding only the characters it needs.
 */
#include "codec/terms_block_impl.h"

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
  TERN_TRY(tern_tb_walk_lengths(b, n, &kpos, &len, sp, pl, sl));
  TERN_TRY(read_prefix(b, &kpos, len, &p, &slen));
  if (prev) copy_shared(dst, prev, p, 0);
  uint32_t need = p;
  TERN_TRY(tern_tb_assemble_shared(b, n, 0, sp, pl, sl, dst, &need));
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
  tern_tb_scan_consts_of(b, &x->sc, pad);
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
