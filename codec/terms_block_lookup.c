/* SPDX-License-Identifier: MIT */
/*
 * terms_block_lookup.c — finds a key in a terms block (terms_block.h,
 * docs/FORMAT.md).
 *
 * The lookup (tern_tb_lower_bound) compares the key with the block prefix,
 * binary-searches the restart keys (plain bytes, compared 8 at a time as
 * big-endian words from the prefix both bounds share with the key) for
 * the last restart <= the key, and scans that run's keys without reconstructing
 * terms.  It keeps m, the length of the prefix the current term (below the
 * key) shares with the key.  The next term shares p bytes with the current
 * one:
 *   p > m   it agrees with the current term where that one is below the
 *           key: it is smaller too, m unchanged; its suffix is skipped;
 *   p < m   it differs from the current term at byte p, upward, where the
 *           current term equals the key: it is greater — the search ends;
 *   p == m  its suffix is compared, usually by its first code alone (the
 *           codes starting with the key's character form one interval),
 *           otherwise character by character as far as it agrees.
 * Characters are decoded only to be compared; tails live in their own
 * stream, so the scan never steps over one, and only the entry found has
 * its tail decoded.
 */
#include "codec/terms_block_impl.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* A key byte as a digit of the block: its rank (the alphabet bytes below
 * it), with KEY_ABSENT when it is not in the alphabet. */
#define KEY_ABSENT 0x200u
#define KEY_RANK 0x1ffu
static inline uint32_t key_digit(const tern_tb_block *b, uint8_t c) {
  if (b->nranges || (b->page[0] & TERN_TB_RANGES)) {
    const uint8_t *r = b->alpha;
    uint32_t base = 0;
    for (uint32_t i = 0; i < b->nranges; i++, r += 2) {
      if (c < r[0]) return base | KEY_ABSENT;
      if (c <= r[1]) return base + (uint32_t)(c - r[0]);
      base += (uint32_t)(r[1] - r[0]) + 1;
    }
    return base | KEY_ABSENT;
  }
  uint64_t bits = tern_load64(b->alpha + 8 * (c >> 6));
  uint64_t bit = (uint64_t)1 << (c & 63);
  uint32_t rank = b->below[c >> 6] + (uint32_t)__builtin_popcountll(bits & (bit - 1));
  return rank | (bits & bit ? 0 : KEY_ABSENT);
}

/* The key from the scan's start as the block codes it: kd[i], key byte
 * i's digit (see key_digit); p2[i] = rank(i) * K + rank(i + 1), two digits
 * as one number (below 2^16 for K <= 256), so that a group's code costs
 * half the multiplications; in_end: the key's bytes before it (from the
 * scan's start) are all in the alphabet, so a group before it is compared
 * as one number. */
typedef struct key_digits_t {
  uint32_t in_end;
  uint16_t kd[TERN_TB_TERM_MAX + 16];
  uint16_t p2[TERN_TB_TERM_MAX + 16];
} key_digits_t;

/* The code of the key's r digits at a (all in the alphabet), r constant
 * when inlined. */
static inline __attribute__((always_inline)) uint32_t key_code(const tern_tb_block *b,
                                                               const key_digits_t *kx,
                                                               uint32_t a, uint32_t r) {
  const uint16_t *kd = kx->kd, *p2 = kx->p2;
  const uint64_t *pw = b->pow;
  switch (r) {
  case 1: return kd[a] & KEY_RANK;
  case 2: return p2[a];
  case 3: return p2[a] * (uint32_t)pw[1] + (kd[a + 2] & KEY_RANK);
  case 4: return p2[a] * (uint32_t)pw[2] + p2[a + 2];
  case 5: return p2[a] * (uint32_t)pw[3] + p2[a + 2] * (uint32_t)pw[1] + (kd[a + 4] & KEY_RANK);
  default: return p2[a] * (uint32_t)pw[4] + p2[a + 2] * (uint32_t)pw[2] + p2[a + 4];
  }
}

/* Steps over the whole groups of g characters (g constant when inlined)
 * that equal the key's, from character *at and bit *sp, stopping before
 * end: the loop of a found entry's comparison, without the general
 * loop's group size choice.  Two codes per read when they fit in 56 bits. */
static inline __attribute__((always_inline)) void equal_groups(const tern_tb_block *b,
                                                               uint32_t *sp, uint32_t *at,
                                                               uint32_t end,
                                                               const key_digits_t *kx,
                                                               uint32_t g) {
  uint32_t w = b->gbits[g], a = *at, s = *sp;
  uint64_t mask = ((uint64_t)1 << w) - 1;
  while (a + g <= end) {
    uint64_t bits = get(b, s, TERN_BITS_MAXW);
    if ((bits & mask) != key_code(b, kx, a, g)) break;
    a += g;
    s += w;
    if (2 * w > TERN_BITS_MAXW || a + g > end) continue;
    if (((bits >> w) & mask) != key_code(b, kx, a, g)) break;
    a += g;
    s += w;
  }
  *at = a;
  *sp = s;
}

/* Compares the slen suffix characters at sp, continuing a term whose first
 * *m bytes equal the key's, with key[*m..klen) given as digits kd (see
 * key_digit).  Returns <0, 0, >0 as the term compares with the key; when
 * <0, *m becomes their common prefix.
 *
 * Group by group: a group the key has whole (and in the alphabet) is one
 * number to compare; only where they differ are digits extracted (most
 * significant first, as far as they agree).  A term digit d against a key
 * byte of rank k: equal when the byte is in the alphabet and d == k;
 * otherwise the term is above iff d >= k (an absent byte sits between
 * digits k-1 and k). */
static inline int cmp_suffix(const tern_tb_block *b, uint32_t sp, uint32_t slen,
                             const key_digits_t *kx, uint32_t klen, uint32_t *m) {
  const uint16_t *kd = kx->kd;
  uint32_t at = *m, end = at + slen;
  uint32_t whole = end < kx->in_end ? end : kx->in_end; /* groups the key has whole */
  switch (b->group) {
  case 1: equal_groups(b, &sp, &at, whole, kx, 1); break;
  case 2: equal_groups(b, &sp, &at, whole, kx, 2); break;
  case 3: equal_groups(b, &sp, &at, whole, kx, 3); break;
  case 4: equal_groups(b, &sp, &at, whole, kx, 4); break;
  case 5: equal_groups(b, &sp, &at, whole, kx, 5); break;
  default: equal_groups(b, &sp, &at, whole, kx, 6); break;
  }
  while (at < end) {
    uint32_t r = end - at < b->group ? end - at : b->group;
    uint32_t code = (uint32_t)get(b, sp, b->gbits[r]);
    sp += b->gbits[r];
    if (at + r <= kx->in_end) {
      uint32_t kc = key_code(b, kx, at, r);
      if (code == kc) {
        at += r;
        continue;
      }
      if (code > kc) return 1;
    }
    for (uint32_t j = r; j-- > 0;) {
      uint32_t d = j ? digit_div(b, code, j) : code;
      code -= d * (uint32_t)b->pow[j];
      if (at >= klen) return 1;
      uint32_t k = kd[at];
      if (d != k) { /* k with KEY_ABSENT never equals a digit */
        if (d >= (k & KEY_RANK)) return 1;
        *m = at;
        return -1;
      }
      at++;
    }
  }
  *m = at;
  return at == klen ? 0 : -1;
}

/* The key's character at m, as first digits compare with it; lo, hi: the
 * codes of a whole group (g characters) that start with it, [lo, hi) —
 * empty, at lo, for a character outside the alphabet; lo = hi = 0 when
 * the key ends at m, as every code is then above it. */
typedef struct key_char {
  uint32_t rank, in, past; /* past: the key ends at m */
  uint32_t at;             /* m */
  uint64_t lo, hi;
} key_char;

static inline void key_char_at(const tern_tb_block *b, const uint16_t *kd, uint32_t klen,
                               uint32_t m, key_char *k) {
  k->past = m >= klen;
  k->at = m;
  k->rank = k->in = 0;
  k->lo = k->hi = 0;
  if (k->past) return;
  k->rank = kd[m] & KEY_RANK;
  k->in = !(kd[m] & KEY_ABSENT);
  uint64_t span = b->pow[b->group - 1];
  k->lo = k->rank * span;
  k->hi = k->lo + (k->in ? span : 0);
}

/* Compares a suffix starting at the key's position m (the term's first m
 * bytes equal the key's); bits: the stream from the suffix on (at least
 * its first code).  Usually decided by the first character, read from the
 * first code without dividing it: the codes whose first digit is the
 * key's character span [rank * K^(r-1), (rank + 1) * K^(r-1)). */
static inline int cmp_at(const tern_tb_block *b, uint32_t sp, uint64_t bits, uint32_t slen,
                         const key_digits_t *kx, uint32_t klen, uint32_t *m, const key_char *k,
                         uint64_t gmask) {
  uint64_t code, lo, hi;
  if (TERN_LIKELY(slen >= b->group)) { /* a whole first group: k's bounds */
    code = bits & gmask;
    lo = k->lo;
    hi = k->hi;
  } else {
    if (k->past) return 1;
    uint64_t span = b->pow[slen - 1];
    code = bits & (((uint64_t)1 << b->gbits[slen]) - 1);
    lo = k->rank * span;
    hi = lo + (k->in ? span : 0);
  }
  if (code < lo) return -1;
  if (code >= hi) return 1;
  return cmp_suffix(b, sp, slen, kx, klen, m);
}

/* ---------------------------------------------------------------- lookup */

/* The lookup's copy of the key, with zero slack, so that the search loads
 * it 8 or 16 bytes at a time wherever it stands (the caller's key may end
 * at the end of its memory). */
#define KEY_SLACK 16u
typedef struct lookup_key {
  const uint8_t *bytes; /* kbuf */
  uint32_t len;
  uint8_t kbuf[TERN_TB_TERM_MAX + KEY_SLACK];
} lookup_key;

/* kd[i] = key_digit(key[i]) for i in [from, klen).  With ranges (the
 * common alphabet) 16 bytes at a time: a byte's rank is the sum over the
 * ranges of min(max(c - lo, 0), hi - lo + 1), and it is in the alphabet
 * when (c - lo) mod 256 <= hi - lo for some range. */
static uint32_t key_ranks(const tern_tb_block *b, const lookup_key *lk, uint32_t from,
                          uint16_t *kd) {
  const uint8_t *key = lk->bytes;
  uint32_t klen = lk->len, in_end = klen;
#if defined(__SSE2__)
  if (b->page[0] & TERN_TB_RANGES) {
    for (uint32_t i = from; i < klen; i += 16) {
      /* The key has KEY_SLACK bytes after it: digits past its end are
       * never read. */
      __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(key + i)), r = _mm_setzero_si128();
      __m128i hit = _mm_setzero_si128();
      const uint8_t *a = b->alpha;
      for (uint32_t q = 0; q < b->nranges; q++, a += 2) {
        __m128i lo = _mm_set1_epi8((char)a[0]), span = _mm_set1_epi8((char)(a[1] - a[0]));
        __m128i below = _mm_subs_epu8(c, lo); /* c - lo, or 0 */
        __m128i len1 = _mm_adds_epu8(span, _mm_set1_epi8(1)); /* 256 saturates to 255 */
        r = _mm_add_epi8(r, _mm_min_epu8(below, len1));
        __m128i d = _mm_sub_epi8(c, lo); /* (c - lo) mod 256 <= span */
        hit = _mm_or_si128(hit, _mm_cmpeq_epi8(_mm_min_epu8(d, span), d));
      }
      /* Widened to 16 bits (kd has room for a whole last chunk). */
      __m128i z = _mm_setzero_si128(), flag = _mm_set1_epi16((short)KEY_ABSENT);
      __m128i lo16 = _mm_or_si128(_mm_unpacklo_epi8(r, z),
                                  _mm_andnot_si128(_mm_unpacklo_epi8(hit, hit), flag));
      __m128i hi16 = _mm_or_si128(_mm_unpackhi_epi8(r, z),
                                  _mm_andnot_si128(_mm_unpackhi_epi8(hit, hit), flag));
      _mm_storeu_si128((__m128i *)(void *)(kd + i), lo16);
      _mm_storeu_si128((__m128i *)(void *)(kd + i + 8), hi16);
      uint32_t miss = ~(uint32_t)_mm_movemask_epi8(hit) & 0xffffu;
      if (miss && in_end == klen) in_end = i + (uint32_t)__builtin_ctz(miss);
    }
    return in_end < klen ? in_end : klen;
  }
#endif
  for (uint32_t i = from; i < klen; i++) {
    kd[i] = (uint16_t)key_digit(b, key[i]);
    if ((kd[i] & KEY_ABSENT) && in_end == klen) in_end = i;
  }
  return in_end;
}

/* kx for the key's bytes from `from` on. */
static void key_digits(const tern_tb_block *b, const lookup_key *lk, uint32_t from,
                       key_digits_t *kx) {
  uint32_t klen = lk->len, k = b->nsym;
  uint16_t *kd = kx->kd, *p2 = kx->p2;
  uint32_t in_end = key_ranks(b, lk, from, kd);
  memset(kd + klen, 0, 8 * sizeof *kd); /* p2 of the last digit reads past it */
  kx->in_end = in_end;
#if defined(__SSE2__)
  __m128i rank = _mm_set1_epi16((short)KEY_RANK), kk = _mm_set1_epi16((short)k);
  for (uint32_t i = from; i < in_end; i += 8) {
    __m128i d0 = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)(kd + i)), rank);
    __m128i d1 = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)(kd + i + 1)), rank);
    _mm_storeu_si128((__m128i *)(void *)(p2 + i), _mm_add_epi16(_mm_mullo_epi16(d0, kk), d1));
  }
#else
  for (uint32_t i = from; i < in_end; i++)
    p2[i] = (uint16_t)((kd[i] & KEY_RANK) * k + (kd[i + 1] & KEY_RANK));
#endif
}

/* Entry e (of run r) equals the key: its tail, and `it` after it (kpos:
 * where the key stream continues). */
static inline __attribute__((always_inline)) int found(const tern_tb_block *b, uint32_t e,
                                                       uint32_t r, uint32_t kpos, uint32_t klen,
                                                       uint32_t *index, tern_tb_iter *it,
                                                       tern_tb_tail *t) {
  uint32_t tpos = 0, pos;
  if (b->tail_bits < 0) { /* the run's tails are stepped over from its restart's */
    uint32_t kp;
    TERN_TRY(restart_pos(b, r, &kp, &tpos));
  }
  TERN_TRY(tail_pos(b, e, r, tpos, &pos));
  TERN_TRY(one_doc(b) ? decode_one_doc(b, &pos, e, t) : tern_tb_decode_tail(b, &pos, e, t));
  it->entry = e + 1;
  it->pos = pos;
  it->kpos = kpos;
  it->len = klen;
  *index = e;
  return 1;
}

/* Compares the plen bytes at page offset `off` with the key's kl bytes at
 * kb (which has KEY_SLACK bytes after it), 8 at a time, starting at byte
 * `at` (both agree before it).  Returns <0, 0, >0 as the page's bytes
 * compare with the key's; *lcp: the length of their common prefix. */
static inline int cmp_page_key(const uint8_t *page, uint32_t off, uint32_t plen, const uint8_t *kb,
                               uint32_t kl, uint32_t at, uint32_t *lcp) {
  uint32_t n = plen < kl ? plen : kl;
  for (; at < n; at += 8) {
    /* Whole words: a difference at or past n only ends the comparison. */
    uint64_t x = page_be64(page, off + at), y = be64_at(kb + at);
    if (x != y) {
      uint32_t l = at + (uint32_t)__builtin_clzll(x ^ y) / 8;
      if (l >= n) break;
      *lcp = l;
      return x < y ? -1 : 1;
    }
  }
  *lcp = n;
  return (plen > kl) - (plen < kl);
}

/* Where the restart search ends: the number of restarts whose keys are
 * <= the key, whether the last of them equals it, and that one's length
 * and common prefix with the key. */
typedef struct restart_le {
  uint32_t count;
  int eq;
  uint32_t rlen, lcp;
} restart_le;

/* Binary search of the restart keys for the key's kl bytes at kb (after
 * the block prefix; KEY_SLACK zero bytes follow them).  A probe first
 * compares the first 8 bytes of both, zero-padded, as one number: unless
 * they are equal that decides (a zero-padded prefix orders below or
 * ties with the longer term).  Ties compare the rest; a restart between
 * two probed ones shares with the key at least the shorter of their
 * common prefixes with it (the keys ascend), so those comparisons start
 * there: keys with long shared prefixes (paths, URLs) are not compared
 * from their first byte at every probe. */
static int restarts_le(const tern_tb_block *b, const uint8_t *kb, uint32_t kl, restart_le *h) {
  uint32_t lo = 0, hi = b->nrestarts, lcp_lo = 0, lcp_hi = 0, eq = 0, rlen = 0;
  uint32_t lcp_known = 0; /* the last restart <= the key: lcp_lo is its common prefix */
  uint64_t x_lo = 0;      /* else its first 8 bytes */
  const uint8_t *rkey = b->rkey, *page = b->page;
  const uint32_t limit = b->keys_start;
  const uint64_t y0 = be64_at(kb);
  while (lo < hi) {
    /* A probe only steers the search: its key is checked to lie in the
     * restart area, the rest of restart_span's checks are made on the
     * restart the search ends at, the only one whose length is used. */
    uint32_t mid = (lo + hi) >> 1, lcp; /* lo + hi < 2^13 */
    uint32_t from = tern_load16(rkey + 2 * mid), to = tern_load16(rkey + 2 * mid + 2);
    if (TERN_UNLIKELY(to < from || 8 * to > limit)) return corrupt(b, "bad restart key");
    uint32_t rl = to - from;
    uint64_t x = page_be64(page, from) & (rl >= 8 ? ~(uint64_t)0 : ~(~(uint64_t)0 >> (8 * rl)));
    if (x != y0) {
      if (x < y0) {
        lo = mid + 1;
        rlen = rl;
        x_lo = x;
        lcp_known = 0;
      } else {
        hi = mid;
      }
      continue;
    }
    int c = cmp_page_key(page, from, rl, kb, kl, lcp_lo < lcp_hi ? lcp_lo : lcp_hi, &lcp);
    if (c <= 0) {
      lo = mid + 1;
      lcp_lo = lcp;
      rlen = rl;
      lcp_known = 1;
      if (c == 0) {
        eq = 1;
        break;
      }
    } else {
      hi = mid;
      lcp_hi = lcp;
    }
  }
  /* lo: the restarts <= the key (the last probed below or equal, if any). */
  if (lo && !lcp_known) { /* they differ in the first 8 bytes, or one ends first */
    uint32_t n = rlen < kl ? rlen : kl, i = (uint32_t)__builtin_clzll(x_lo ^ y0) / 8;
    lcp_lo = i < n ? i : n;
  }
  *h = (restart_le){lo, (int)eq, lo ? rlen : 0, lo ? lcp_lo : 0};
  /* The rest of restart_span's checks, on the restart found (its bounds
   * were checked by its probe). */
  if (lo && TERN_UNLIKELY(b->cp + rlen > TERN_TB_TERM_MAX ||
                          (b->fixed_len && b->cp + rlen != b->fixed_len) || (lo > 1 && rlen == 0)))
    return corrupt(b, "bad restart key");
  return TERN_OK;
}

/* The scan's loop over run r's entries e..end-1 from key stream bit pos,
 * with `fixed` constant when inlined (two copies: no test of the block's
 * length coding per entry), and suffix_bits from local copies of the
 * block's coding. */
static inline __attribute__((always_inline)) int scan_entries(
    const tern_tb_block *b, uint32_t r, uint32_t e, uint32_t end, uint32_t pos,
    const key_digits_t *kx, uint32_t klen, uint32_t m, uint32_t cur, key_char *k, int fixed_len,
    uint32_t *index, tern_tb_iter *it, tern_tb_tail *t) {
  const uint32_t cp = b->cp, fixed = fixed_len ? b->fixed_len : 0, wp = b->bw_plen;
  const uint32_t ws = fixed_len ? 0 : b->bw_slen, g = b->group, gdiv = b->gdiv;
  const uint8_t *gbits = b->gbits;
  const uint16_t *sb = b->sbits;
  const uint32_t wg = gbits[g], tails = b->tails_start;
  const uint64_t pmask = ((uint64_t)1 << wp) - 1, smask = ((uint64_t)1 << ws) - 1;
  const uint64_t gmask = ((uint64_t)1 << wg) - 1;
  for (; e < end; e++) {
    uint64_t v = get(b, pos, TERN_BITS_MAXW);
    uint32_t p = cp + (uint32_t)(v & pmask), slen;
    v >>= wp;
    if (fixed_len) { /* every term, so the previous (cur), has `fixed` bytes */
      slen = fixed - p;
      if (TERN_UNLIKELY(p >= fixed)) return corrupt(b, "bad entry prefix");
    } else {
      slen = (uint32_t)(v & smask);
      v >>= ws;
      if (TERN_UNLIKELY(p > cur || slen == 0 || p + slen > TERN_TB_TERM_MAX))
        return corrupt(b, "bad entry prefix or suffix length");
    }
    uint32_t sp = pos + wp + ws;
    uint32_t sbits = TERN_LIKELY(slen < TERN_TB_SBITS) ? sb[slen] : suffix_bits_of(slen, gdiv, g, gbits);
    if (p > m) { /* below the key like the previous term: skip it */
      pos = sp + sbits;
      cur = p + slen;
      continue;
    }
    pos = sp;
    if (p < m) break;
    int c = cmp_at(b, sp, v, slen, kx, klen, &m, k, gmask);
    if (c > 0) break;
    pos = sp + sbits;
    cur = p + slen;
    if (TERN_UNLIKELY(pos > tails)) return corrupt(b, "key past the end of the key stream");
    if (c == 0) return found(b, e, r, pos, klen, index, it, t);
    if (m != k->at) key_char_at(b, kx->kd, klen, m, k);
  }
  if (TERN_UNLIKELY(pos > tails)) return corrupt(b, "key past the end of the key stream");
  *index = e;
  return 0;
}

/* Starts fetching the lines of the run whose non-restart entries are
 * [e, end), its keys from bit pos: the keys and the tails the entry found
 * may have. */
/* Inlined always: GCC finds a function that only prefetches "const" and
 * drops the calls to it (the prefetches then never happen). */
static inline __attribute__((always_inline)) void prefetch_run(const tern_tb_block *b, uint32_t e,
                                                             uint32_t end, uint32_t pos,
                                                             uint32_t tpos) {
  __builtin_prefetch(b->page + (pos >> 3));
  if ((pos >> 3) + 64 < TERN_TB_PAGE) __builtin_prefetch(b->page + (pos >> 3) + 64);
  uint32_t tb = tpos, te = 0;
  if (b->tail_bits >= 0) {
    tb = b->tails_start + e * (uint32_t)b->tail_bits;
    te = tb + (end - e) * (uint32_t)b->tail_bits;
  } else { /* the tails are stepped over from the restart's (tail_pos): its first lines */
    te = tb + 8 * 128;
    if (tb + 8 * 64 < 8 * TERN_TB_PAGE) __builtin_prefetch(b->page + (tb >> 3) + 64);
  }
  if (tb < 8 * TERN_TB_PAGE) __builtin_prefetch(b->page + (tb >> 3));
  if (te < 8 * TERN_TB_PAGE) __builtin_prefetch(b->page + (te >> 3));
}

/* Scans run pd->r's non-restart entries (restart r is below the key and
 * shares pd->m bytes with it; pd->cur: its length) for the first entry
 * >= key, from key stream bit pd->kpos, its lines asked for already
 * (run_start).  One 56-bit read per entry yields its shared prefix, its
 * suffix length and its suffix's first code (at most 11 + 11 + 32 bits). */
static int scan_run(const tern_tb_block *b, const tern_tb_pending *pd, const lookup_key *lk,
                    uint32_t *index, tern_tb_iter *it, tern_tb_tail *t) {
  uint32_t r = pd->r, m = pd->m, cur = pd->cur, pos = pd->kpos;
  uint32_t e = r * b->restart + 1, end = e - 1 + b->restart;
  if (end > b->n) end = b->n;
  if (e >= end) {
    *index = end;
    return 0;
  }
  uint32_t klen = lk->len;
  key_digits_t kx; /* the key's bytes from m, as digits */
  key_digits(b, lk, m, &kx);
  key_char k;
  key_char_at(b, kx.kd, klen, m, &k);
  if (b->fixed_len) return scan_entries(b, r, e, end, pos, &kx, klen, m, cur, &k, 1, index, it, t);
  return scan_entries(b, r, e, end, pos, &kx, klen, m, cur, &k, 0, index, it, t);
}

/* Where run pd->r goes on in the key stream (pd->kpos) and its lines
 * asked for: the run's keys, and the tails the entry found may have,
 * fetched while the key is coded into digits. */
static int run_start(const tern_tb_block *b, tern_tb_pending *pd) {
  uint32_t e = pd->r * b->restart + 1, end = e - 1 + b->restart, tpos;
  if (end > b->n) end = b->n;
  TERN_TRY(restart_pos(b, pd->r, &pd->kpos, &tpos));
  if (e < end) prefetch_run(b, e, end, pd->kpos, tpos);
  return TERN_OK;
}

/* The key copied with zero slack (lookup_key). */
static void key_copy(lookup_key *lk, const uint8_t *key, uint32_t klen) {
  memcpy(lk->kbuf, key, klen);
  memset(lk->kbuf + klen, 0, KEY_SLACK);
  lk->bytes = lk->kbuf;
  lk->len = klen;
}

/* tern_tb_lower_bound up to the run scan: the prefix and the restarts.
 * TERN_TB_PENDING with *pd set when run pd->r must be scanned. */
static int lower_bound_restarts(const tern_tb_block *b, const lookup_key *lk, uint32_t *index,
                                tern_tb_iter *it, tern_tb_tail *t, tern_tb_pending *pd) {
  /* Every term starts with the block prefix. */
  uint32_t lcp, cp = b->cp, klen = lk->len;
  int c = cmp_page_key(b->page, (uint32_t)(b->prefix - b->page), cp, lk->bytes, klen, 0, &lcp);
  if (lcp < cp) {
    *index = c > 0 ? 0 : b->n;
    return 0;
  }
  restart_le h = {0, 0, 0, 0};
  TERN_TRY(restarts_le(b, lk->bytes + cp, klen - cp, &h));
  if (h.count == 0) {
    *index = 0;
    return 0;
  }
  uint32_t r = h.count - 1;
  if (h.eq) {
    uint32_t kpos, tpos;
    TERN_TRY(restart_pos(b, r, &kpos, &tpos));
    return found(b, r * b->restart, r, kpos, klen, index, it, t);
  }
  *pd = (tern_tb_pending){r, cp + h.lcp, cp + h.rlen, 0};
  TERN_TRY(run_start(b, pd));
  return TERN_TB_PENDING;
}

static int check_key_len(uint32_t klen) {
  if (klen > TERN_TB_TERM_MAX)
    return tern_fail(TERN_EINVAL, "terms block: key of %u bytes (at most %u)", klen, TERN_TB_TERM_MAX);
  return TERN_OK;
}

int tern_tb_lower_bound(const tern_tb_block *b, const uint8_t *key, uint32_t klen, uint32_t *index,
                        tern_tb_iter *it, tern_tb_tail *t) {
  TERN_TRY(check_key_len(klen));
  lookup_key lk;
  key_copy(&lk, key, klen);
  tern_tb_pending pd;
  int rc = lower_bound_restarts(b, &lk, index, it, t, &pd);
  if (rc != TERN_TB_PENDING) return rc;
  return scan_run(b, &pd, &lk, index, it, t);
}

int tern_tb_lookup_begin(const tern_tb_block *b, const uint8_t *key, uint32_t klen,
                         uint32_t *index, tern_tb_iter *it, tern_tb_tail *t, tern_tb_pending *pd) {
  TERN_TRY(check_key_len(klen));
  lookup_key lk;
  key_copy(&lk, key, klen);
  return lower_bound_restarts(b, &lk, index, it, t, pd);
}

int tern_tb_lookup_finish(const tern_tb_block *b, const uint8_t *key, uint32_t klen,
                          const tern_tb_pending *pd, uint32_t *index, tern_tb_iter *it,
                          tern_tb_tail *t) {
  lookup_key lk;
  key_copy(&lk, key, klen);
  return scan_run(b, pd, &lk, index, it, t);
}

void tern_tb_copy_value(const tern_tb_block *b, const tern_tb_tail *t, uint8_t *out) {
  uint32_t pos = t->vbit, i = 0;
  /* Primary keys' tails are just their values: byte-aligned (decode_tail
   * checked that they end inside the block). */
  if ((pos & 7) == 0) {
    memcpy(out, b->page + (pos >> 3), t->vlen);
    return;
  }
  for (; i + 7 <= t->vlen; i += 7, pos += 56) {
    uint64_t v = get(b, pos, 56);
    for (int q = 0; q < 7; q++) out[i + q] = (uint8_t)(v >> (8 * q));
  }
  /* The last 1 to 6 bytes from one read (a short value's only one). */
  uint32_t r = t->vlen - i;
  if (r == 0) return;
  uint64_t v = get(b, pos, 8 * r);
  for (uint32_t q = 0; q < r; q++) out[i + q] = (uint8_t)(v >> (8 * q));
}
