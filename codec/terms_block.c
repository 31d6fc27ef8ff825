/* SPDX-License-Identifier: MIT */
/*
 * terms_block.c — reads a terms block (terms_block.h, docs/FORMAT.md).
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
#include "codec/terms_block.h"

#include "codec/coding.h"
#include "codec/status.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define WMAX_LEN 11u /* lengths are at most 1024 */
#define WMAX_U32 32u
#define WMAX_DOC 33u /* doc - index spans 2^32 + 4096 */
#define WMAX_OFF 48u
#define VLEN_MAX (16u << 20) /* longest value */

/* Out of line and cold: the hot paths only branch to it. */
static __attribute__((cold, noinline)) int corrupt(const tern_tb_block *b, const char *why) {
  return tern_fail(TERN_ECORRUPT, "%s: terms block %llu: %s", b->what,
                   (unsigned long long)b->block_no, why);
}

/* The block's last bytes, assembled one at a time: out of line, so that
 * the hot loops keep one load per read. */
static __attribute__((cold, noinline)) uint64_t tail64(const uint8_t *page, uint32_t byte) {
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

/* sym[0..hi-lo] = lo..hi, eight at a time (sym has 8 bytes of slack):
 * byte i of c * 0x0101.. + 0x0706..00 is c + i, exact while c + i <= hi
 * (<= 255: no carry reaches it from the bytes below); the bytes past hi
 * are slack the next range overwrites. */
static void fill_range(uint8_t *sym, uint32_t lo, uint32_t hi) {
  for (uint32_t c = lo; c <= hi; c += 8)
    scan_store(sym + (c - lo), c * 0x0101010101010101ull + 0x0706050403020100ull);
}

/* Checks the alphabet and counts it; the tables wait for tern_tb_tables. */
static int parse_alphabet(tern_tb_block *b, const uint8_t **pp) {
  const uint8_t *p = *pp;
  uint32_t d = 0;
  b->tables = 0;
  b->pair = NULL;
  if (b->page[0] & TERN_TB_RANGES) {
    uint32_t nr = *p++;
    if (nr > 15) return corrupt(b, "bad alphabet range count");
    b->alpha = p;
    b->nranges = nr;
    int prev = -1;
    for (uint32_t i = 0; i < nr; i++, p += 2) {
      if ((int)p[0] <= prev || p[1] < p[0]) return corrupt(b, "bad alphabet ranges");
      d += (uint32_t)(p[1] - p[0]) + 1;
      prev = p[1];
    }
  } else {
    b->alpha = p;
    b->nranges = 0;
    for (uint32_t word = 0; word < 4; word++) {
      b->below[word] = d;
      d += (uint32_t)__builtin_popcountll(tern_load64(p + 8 * word));
    }
    p += 32;
  }
  b->nsym = d; /* 0: every suffix of the block is empty */
  *pp = p;
  return TERN_OK;
}

/* Only digit -> byte: decoding needs no more (a lookup codes its key's
 * bytes into digits from the alphabet itself, key_digit), and a seek that
 * goes on stepping fills this per block it lands in. */
void tern_tb_tables(tern_tb_block *b) {
  if (b->tables) return;
  const uint8_t *p = b->alpha;
  uint32_t d = 0;
  if (b->page[0] & TERN_TB_RANGES) {
    for (uint32_t i = 0; i < b->nranges; i++, p += 2) {
      uint32_t lo = p[0], hi = p[1];
      fill_range(b->sym + d, lo, hi);
      d += hi - lo + 1;
    }
  } else {
    for (uint32_t word = 0; word < 4; word++) {
      uint64_t bits = tern_load64(p + 8 * word);
      while (bits) {
        b->sym[d++] = (uint8_t)(word * 64 + (unsigned)__builtin_ctzll(bits));
        bits &= bits - 1;
      }
    }
  }
  b->tables = 1;
}

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

/* ceil(2^16 / g) for each group size g: suffix_bits divides by g with it. */
static const uint32_t g_gdiv[TERN_TB_GROUP_MAX + 1] = {0, 65536, 32768, 21846, 16384, 13108, 10923};

/* Powers of every alphabet size and their reciprocals, and suffix_bits of
 * the short suffixes, per alphabet size and group: a block only points at
 * its row.  Each row is filled the first time a block has that alphabet
 * size (not all at start: a fresh process that reads one block pays for
 * its own row only, a few cache lines, not ~30 KiB of pages faulted in). */
static uint64_t g_pow[257][TERN_TB_GROUP_MAX + 1], g_rpow[257][TERN_TB_GROUP_MAX + 1];
static uint8_t g_bits[257][TERN_TB_GROUP_MAX + 1];
static uint32_t g_rmask[257][TERN_TB_GROUP_MAX + 1]; /* (1 << g_bits) - 1: a code's mask */
static uint8_t g_gmax[257]; /* the largest group that decodes exactly: K^(g+1) <= 2^32 */
static uint16_t g_sbits[257][TERN_TB_GROUP_MAX + 1][TERN_TB_SBITS];
static atomic_int g_row_ready[257];
static pthread_mutex_t g_row_lock = PTHREAD_MUTEX_INITIALIZER;

/* Row k of every table, once (the first block of alphabet size k). */
static __attribute__((cold, noinline)) void fill_row(uint32_t k) {
  pthread_mutex_lock(&g_row_lock);
  if (!atomic_load_explicit(&g_row_ready[k], memory_order_relaxed)) {
    uint64_t p = 1;
    for (uint32_t j = 0; j <= TERN_TB_GROUP_MAX; j++, p *= k) {
      g_pow[k][j] = p;
      g_bits[k][j] = (uint8_t)tern_bitwidth(p - 1);
      g_rmask[k][j] = (uint32_t)(((uint64_t)1 << g_bits[k][j]) - 1);
      g_rpow[k][j] = p == 1 ? 0 : UINT64_MAX / p + 1;
      if (j >= 1 && p * k <= (1ull << 32)) g_gmax[k] = (uint8_t)j;
    }
    for (uint32_t g = 1; g <= TERN_TB_GROUP_MAX; g++)
      for (uint32_t n = 0; n < TERN_TB_SBITS; n++)
        g_sbits[k][g][n] = (uint16_t)suffix_bits_of(n, g_gdiv[g], g, g_bits[k]);
    atomic_store_explicit(&g_row_ready[k], 1, memory_order_release);
  }
  pthread_mutex_unlock(&g_row_lock);
}

/* Bits of each code size; the group must decode exactly (K^(g+1) <= 2^32). */
static int set_digit_coding(tern_tb_block *b) {
  uint32_t k = b->nsym ? b->nsym : 1;
  assert(k <= 256);
  if (TERN_UNLIKELY(!atomic_load_explicit(&g_row_ready[k], memory_order_acquire))) fill_row(k);
  if (b->group > g_gmax[k]) return corrupt(b, "character group too large for the alphabet");
  b->gbits = g_bits[k];
  b->pow = g_pow[k];
  b->rpow = g_rpow[k];
  b->gdiv = g_gdiv[b->group];
  b->sbits = g_sbits[k][b->group];
  return TERN_OK;
}

/* A header varint: the bases are mostly below 2^14 (a doc base is the
 * block's first doc less its index, zigzagged). */
static inline int base_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v) {
  const uint8_t *p = *pp;
  if (TERN_LIKELY(end - p >= 2)) {
    if (p[0] < 0x80) {
      *v = p[0];
      *pp = p + 1;
      return 0;
    }
    if (p[1] < 0x80) {
      *v = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
      *pp = p + 2;
      return 0;
    }
  }
  return tern_get_varint(pp, end, v);
}

/* The header's varints (docs/FORMAT.md): v[0] the fixed length (when
 * fixed), v[1..7] the prefix length and the columns' bases. */
static int read_bases(tern_tb_block *b, const uint8_t **pp, int fixed, uint64_t v[8]) {
  const uint8_t *p = *pp, *end = b->page + TERN_TB_PAGE;
  int bad = fixed ? base_varint(&p, end, &v[0]) : 0;
  bad |= base_varint(&p, end, &v[1]);
  bad |= base_varint(&p, end, &v[2]);
  bad |= base_varint(&p, end, &v[3]);
  bad |= base_varint(&p, end, &v[4]);
  bad |= base_varint(&p, end, &v[5]);
  bad |= base_varint(&p, end, &v[6]);
  bad |= base_varint(&p, end, &v[7]);
  if (bad) return corrupt(b, "bad header varint");
  *pp = p;
  return TERN_OK;
}

static void set_tail_bits(tern_tb_block *b) {
  b->tail_bits = -1;
  if (b->bw_df != 0) return;
  if (b->f.has_values && b->bw_vlen != 0) return;
  uint64_t bits;
  if (b->df_min <= b->f.threshold)
    bits = b->bw_doc + (uint64_t)(b->df_min - 1) * b->bw_gap;
  else
    bits = b->bw_off + b->bw_len;
  if (b->f.has_values) bits += b->vlen_min <= b->f.inline_max ? 8ull * b->vlen_min : b->bw_voff;
  if (bits <= 8u * TERN_TB_PAGE) b->tail_bits = (int32_t)bits;
}

/* The restart search probes lines across the restart keys: fetch them
 * all at once rather than one miss per probe (the segment reader asks for
 * the first 8 lines before the block is opened).  Inlined always: GCC
 * drops calls to a function that only prefetches. */
static inline __attribute__((always_inline)) void prefetch_restarts(const tern_tb_block *b) {
  for (uint32_t line = 8; line < b->keys_start / 512 && line < 32; line++)
    __builtin_prefetch(b->page + 64 * line);
}

int tern_tb_open_lookup(tern_tb_block *b, const uint8_t *page, const tern_tb_field *f,
                        uint32_t expect_n, const char *what, uint64_t block_no) {
  b->page = page;
  b->what = what;
  b->block_no = block_no;
  b->f = *f;
  if (page[0] & ~(TERN_TB_FIXED_LEN | TERN_TB_RANGES | TERN_TB_UNIFORM))
    return corrupt(b, "unknown flags");
  b->restart = page[1];
  b->n = tern_load16(page + 2);
  b->keys_start = tern_load16(page + 4);
  b->tails_start = tern_load16(page + 6);
  b->used_bits = tern_load16(page + 8);
  b->group = page[19];
  if (b->restart == 0) return corrupt(b, "restart interval 0");
  if (b->n == 0 || b->n > TERN_TB_MAX_ENTRIES) return corrupt(b, "bad entry count");
  if (expect_n && b->n != expect_n) return corrupt(b, "entry count differs from the terms index");
  if (b->group < 1 || b->group > TERN_TB_GROUP_MAX) return corrupt(b, "bad character group");
  /* No division for the writer's power-of-two intervals. */
  uint32_t rmask = b->restart - 1;
  b->nrestarts = (b->restart & rmask) == 0 ? (b->n + rmask) >> __builtin_ctz(b->restart)
                                           : (b->n + rmask) / b->restart;
  /* The nine widths against their limits, eight bytes at a time: byte i
   * of (limit | 0x80) - width keeps bit 7 iff width <= limit (no borrow
   * crosses bytes once every width is below 0x80). */
  const uint64_t hi = 0x8080808080808080ull;
  const uint64_t lim = WMAX_LEN | WMAX_LEN << 8 | WMAX_U32 << 16 | WMAX_DOC << 24 |
                       (uint64_t)WMAX_U32 << 32 | (uint64_t)WMAX_OFF << 40 |
                       (uint64_t)WMAX_OFF << 48 | (uint64_t)WMAX_U32 << 56;
  uint64_t wv = tern_load64(page + 10);
  unsigned over = (wv & hi) || (~((lim | hi) - wv) & hi) || page[18] > WMAX_OFF;
  b->bw_plen = page[10];
  b->bw_slen = page[11];
  b->bw_df = page[12];
  b->bw_doc = page[13];
  b->bw_gap = page[14];
  b->bw_off = page[15];
  b->bw_len = page[16];
  b->bw_vlen = page[17];
  b->bw_voff = page[18];
  if (over) return corrupt(b, "column width out of range");
  const uint8_t *p = page + TERN_TB_HEADER_FIXED, *end = page + TERN_TB_PAGE;
  TERN_TRY(parse_alphabet(b, &p));
  TERN_TRY(set_digit_coding(b));
  uint64_t v[8] = {0};
  int fixed = page[0] & TERN_TB_FIXED_LEN;
  TERN_TRY(read_bases(b, &p, fixed, v));
  if (fixed && (v[0] < 1 || v[0] > TERN_TB_TERM_MAX)) return corrupt(b, "bad fixed term length");
  if (fixed && b->bw_slen) return corrupt(b, "fixed length with a length column");
  if (v[1] > TERN_TB_TERM_MAX || (fixed && v[1] > v[0])) return corrupt(b, "bad prefix length");
  if (v[2] < 1 || v[2] > UINT32_MAX) return corrupt(b, "bad minimum df");
  int64_t base = tern_unzigzag(v[3]);
  if (base < -(int64_t)TERN_TB_MAX_ENTRIES || base > (int64_t)UINT32_MAX)
    return corrupt(b, "bad doc base");
  if ((v[4] | v[5] | v[7]) >> WMAX_OFF) return corrupt(b, "bad offset base");
  if (v[6] > UINT32_MAX) return corrupt(b, "bad minimum value length");
  b->fixed_len = (uint32_t)v[0];
  b->cp = (uint32_t)v[1];
  b->df_min = (uint32_t)v[2];
  b->doc_base = base;
  b->off_min = v[4];
  b->len_min = v[5];
  b->vlen_min = (uint32_t)v[6];
  b->voff_min = v[7];
  set_tail_bits(b);
  int uniform = page[0] & TERN_TB_UNIFORM;
  if (uniform && b->tail_bits < 0) return corrupt(b, "uniform tails of varying width");
  if (!uniform) b->tail_bits = -1; /* positions are listed: step from them */
  size_t lists = uniform ? 1 : 2;
  size_t rest = (size_t)b->cp + 2 * ((size_t)b->nrestarts + 1) + 2 * lists * ((size_t)b->nrestarts - 1);
  if ((size_t)(end - p) < rest) return corrupt(b, "header overflows the block");
  b->prefix = p;
  b->rkey = p + b->cp;
  b->rkpos = b->rkey + 2 * ((size_t)b->nrestarts + 1);
  b->rtpos = uniform ? NULL : b->rkpos + 2 * ((size_t)b->nrestarts - 1);
  p += rest;
  /* The restart keys run from the end of the position lists to the key
   * stream; each one's own bounds are checked when it is used. */
  if (tern_load16(b->rkey) != (uint32_t)(p - page) ||
      8u * tern_load16(b->rkey + 2 * b->nrestarts) != b->keys_start ||
      b->keys_start > b->tails_start || b->tails_start > b->used_bits || (b->tails_start & 7) ||
      b->used_bits > 8u * TERN_TB_PAGE)
    return corrupt(b, "bad section bounds");
  prefetch_restarts(b);
  return TERN_OK;
}

void tern_tb_save(const tern_tb_block *b, tern_tb_saved *sv) {
  memcpy(sv->img, b, TERN_TB_SAVED_BYTES);
  sv->prefix = (uint16_t)(b->prefix - b->page);
  sv->rkey = (uint16_t)(b->rkey - b->page);
  sv->rkpos = (uint16_t)(b->rkpos - b->page);
  sv->rtpos = b->rtpos ? (uint16_t)(b->rtpos - b->page) : 0;
  sv->alpha = (uint16_t)(b->alpha - b->page);
}

void tern_tb_open_saved(tern_tb_block *b, const tern_tb_saved *sv, const uint8_t *page,
                        const char *what, uint64_t block_no) {
  memcpy(b, sv->img, TERN_TB_SAVED_BYTES);
  b->page = page;
  b->what = what;
  b->block_no = block_no;
  b->prefix = page + sv->prefix;
  b->rkey = page + sv->rkey;
  b->rkpos = page + sv->rkpos;
  b->rtpos = sv->rtpos ? page + sv->rtpos : NULL;
  b->alpha = page + sv->alpha;
  b->tables = 0;
  b->pair = NULL;
  prefetch_restarts(b);
}

int tern_tb_open(tern_tb_block *b, const uint8_t *page, const tern_tb_field *f, uint32_t expect_n,
                 const char *what, uint64_t block_no) {
  TERN_TRY(tern_tb_open_lookup(b, page, f, expect_n, what, block_no));
  tern_tb_tables(b);
  return TERN_OK;
}

/* ------------------------------------------------------------ entry parts */

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

static int decode_tail(const tern_tb_block *b, uint32_t *pos, uint32_t idx, tern_tb_tail *t) {
  return tail_decode(b, pos, idx, t);
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

/* decode_suffix for one character per code (w bits each, the usual
 * choice for alphabets near a power of two): one 64-bit read yields up to
 * 56 / w characters, instead of one read per character. */
static int decode_single(const tern_tb_block *b, uint32_t sp, uint32_t slen, uint8_t *out) {
  unsigned w = b->gbits[1], per = 56u / w;
  uint64_t mask = ((uint64_t)1 << w) - 1;
  for (uint32_t i = 0; i < slen;) {
    uint64_t v = get(b, sp, 56);
    uint32_t n = slen - i < per ? slen - i : per;
    sp += n * w;
    for (uint32_t k = 0; k < n; k++, v >>= w) {
      uint32_t d = (uint32_t)(v & mask);
      if (d >= b->nsym) return corrupt(b, "character outside the block alphabet");
      out[i++] = b->sym[d];
    }
  }
  return TERN_OK;
}

/* The bytes of b's alphabet as stored (after a range list's count). */
static inline uint32_t alpha_bytes(const tern_tb_block *b) {
  return (b->page[0] & TERN_TB_RANGES) ? 2 * b->nranges : 32;
}

void tern_tb_use_pairs(tern_tb_block *b, tern_tb_pairs *pairs, int build) {
  uint32_t k = b->nsym;
  if (b->pair || b->group < 2 || k == 0 || k > TERN_TB_PAIR_K) return;
  if (pairs->nsym != k || memcmp(pairs->sym, b->sym, k) != 0) {
    if (!build) return;
    for (uint32_t hi = 0; hi < k; hi++)
      for (uint32_t lo = 0; lo < k; lo++) {
        pairs->tab[2 * (hi * k + lo)] = b->sym[hi];
        pairs->tab[2 * (hi * k + lo) + 1] = b->sym[lo];
      }
    memcpy(pairs->sym, b->sym, k);
    memset(pairs->sym + k, 0, TERN_TB_PAIR_K - k); /* tern_tb_tables_from_pairs copies them all */
    pairs->nsym = k;
    pairs->ranges = (b->page[0] & TERN_TB_RANGES) != 0;
    pairs->alpha_len = alpha_bytes(b);
    memcpy(pairs->alpha, b->alpha, pairs->alpha_len);
  }
  b->pair = pairs->tab;
}

int tern_tb_tables_from_pairs(tern_tb_block *b, const tern_tb_pairs *pairs) {
  uint32_t k = b->nsym, n = alpha_bytes(b);
  if (b->tables || b->pair || b->group < 2 || k == 0 || pairs->nsym != k ||
      pairs->ranges != ((b->page[0] & TERN_TB_RANGES) != 0) || pairs->alpha_len != n ||
      memcmp(pairs->alpha, b->alpha, n) != 0)
    return 0;
  /* All of pairs->sym: one copy of fixed size (digits past k are never
   * read; b->sym has room for 256). */
  memcpy(b->sym, pairs->sym, TERN_TB_PAIR_K);
  b->tables = 1;
  b->pair = pairs->tab;
  return 1;
}

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

static int decode_suffix_pairs(const tern_tb_block *b, uint32_t sp, uint32_t slen, uint8_t *out) {
  return suffix_pairs(b, sp, slen, out, 0);
}

/* Decodes slen suffix characters at sp into out. */
static int decode_suffix(const tern_tb_block *b, uint32_t sp, uint32_t slen, uint8_t *out) {
  if (b->group == 1 && b->gbits[1] > 0) return decode_single(b, sp, slen, out);
  if (b->pair) return decode_suffix_pairs(b, sp, slen, out);
  for (uint32_t i = 0, r; i < slen; i += r, out += r) {
    r = slen - i < b->group ? slen - i : b->group;
    uint32_t code = (uint32_t)get(b, sp, b->gbits[r]);
    sp += b->gbits[r];
    int bad;
    switch (r) {
    case 1: bad = decode_code(b, code, 1, out); break;
    case 2: bad = decode_code(b, code, 2, out); break;
    case 3: bad = decode_code(b, code, 3, out); break;
    case 4: bad = decode_code(b, code, 4, out); break;
    case 5: bad = decode_code(b, code, 5, out); break;
    default: bad = decode_code(b, code, 6, out); break;
    }
    if (bad) return corrupt(b, "character outside the block alphabet");
  }
  return TERN_OK;
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

/* ------------------------------------------------------------- restarts */

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

static inline int bytes_cmp(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen) {
  uint32_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  return c ? c : (alen > blen) - (alen < blen);
}

/* Restart entry r's term into dst (its length in *len), with the checks
 * of the key side: it starts where the stream stands (kpos), and restart
 * keys ascend (the lookup's binary search relies on their order).  *tpos:
 * where its tail starts (NULL: not wanted). */
static int restart_term(const tern_tb_block *b, uint32_t r, uint32_t kpos, uint8_t *dst,
                        uint32_t *len, uint32_t *tpos) {
  uint32_t rk, rt, klen;
  const uint8_t *key;
  TERN_TRY(restart_pos(b, r, &rk, &rt));
  if (rk != kpos) return corrupt(b, "restart position differs from the stream");
  TERN_TRY(restart_key(b, r, &key, &klen));
  if (r > 0) {
    const uint8_t *prev;
    uint32_t plen;
    TERN_TRY(restart_key(b, r - 1, &prev, &plen));
    if (bytes_cmp(prev, plen, key, klen) >= 0) return corrupt(b, "restart keys not ascending");
  }
  memcpy(dst, b->prefix, b->cp);
  memcpy(dst + b->cp, key, klen);
  *len = b->cp + klen;
  if (tpos) *tpos = rt;
  return TERN_OK;
}

/* ------------------------------------------------------------- iteration */

int tern_tb_iter_restart(const tern_tb_block *b, tern_tb_iter *it, uint32_t r, uint8_t *term) {
  if (r >= b->nrestarts) return corrupt(b, "restart out of range");
  memcpy(term, b->prefix, b->cp);
  it->entry = r * b->restart;
  it->len = b->cp;
  return restart_pos(b, r, &it->kpos, &it->pos);
}

int tern_tb_iter_next(const tern_tb_block *b, tern_tb_iter *it, uint8_t *term, tern_tb_tail *t) {
  if (it->entry >= b->n) return TERN_NOTFOUND;
  if (TERN_UNLIKELY(!b->tables))
    return tern_fail(TERN_EINVAL, "terms block: decoding without tern_tb_tables");
  uint32_t e = it->entry, rmask = b->restart - 1;
  /* A step pays no division: the interval is a power of two as written. */
  if ((b->restart & rmask) == 0 ? (e & rmask) == 0 : e % b->restart == 0) {
    uint32_t tpos;
    TERN_TRY(restart_term(b, e / b->restart, it->kpos, term, &it->len, &tpos));
    if (tpos != it->pos) return corrupt(b, "restart position differs from the stream");
  } else {
    uint32_t p, slen;
    TERN_TRY(read_prefix(b, &it->kpos, it->len, &p, &slen));
    /* The pair table's decode inline: it is most of a scan's step. */
    TERN_TRY(b->pair ? suffix_pairs(b, it->kpos, slen, term + p, TERN_TB_TERM_MAX - p)
                     : decode_suffix(b, it->kpos, slen, term + p));
    it->kpos += suffix_bits(b, slen);
    it->len = p + slen;
    if (it->kpos > b->tails_start) return corrupt(b, "key past the end of the key stream");
  }
  TERN_TRY(tail_decode(b, &it->pos, e, t));
  it->entry = e + 1;
  if (it->entry == b->n && (it->kpos + 7) / 8 * 8 != b->tails_start)
    return corrupt(b, "key stream length differs from its entries");
  return TERN_OK;
}

/* ------------------------------------------------------- batched scanning */

static inline int one_doc(const tern_tb_block *b);
static inline int decode_one_doc(const tern_tb_block *b, uint32_t *pos, uint32_t e,
                                 tern_tb_tail *t);

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
                   : decode_suffix(b, *kpos, slen, dst + p));
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
  const uint32_t *rmask;  /* the mask of a code of r characters (g_rmask's row) */
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
  sc->rmask = g_rmask[b->nsym ? b->nsym : 1];
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
      TERN_TRY(restart_term(b, e / b->restart, kpos, dst, &len, NULL));
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
    TERN_TRY(decode_suffix(b, sp[k], whole < sl[k] ? whole : sl[k], tmp));
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
  TERN_TRY(one_doc(b) ? decode_one_doc(b, &pos, e, t) : decode_tail(b, &pos, e, t));
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
                                                             uint32_t end, uint32_t pos) {
  __builtin_prefetch(b->page + (pos >> 3));
  if ((pos >> 3) + 64 < TERN_TB_PAGE) __builtin_prefetch(b->page + (pos >> 3) + 64);
  if (b->tail_bits >= 0) {
    uint32_t tb = b->tails_start + e * (uint32_t)b->tail_bits;
    if (tb < 8 * TERN_TB_PAGE) __builtin_prefetch(b->page + (tb >> 3));
    tb += (end - e) * (uint32_t)b->tail_bits;
    if (tb < 8 * TERN_TB_PAGE) __builtin_prefetch(b->page + (tb >> 3));
  }
}

/* Scans run r's non-restart entries (restart r is below the key and
 * shares m bytes with it; cur: its length) for the first entry >= key.
 * One 56-bit read per entry yields its shared prefix, its suffix length
 * and its suffix's first code (at most 11 + 11 + 32 bits). */
static int scan_run(const tern_tb_block *b, uint32_t r, const lookup_key *lk, uint32_t m,
                    uint32_t cur, uint32_t *index, tern_tb_iter *it, tern_tb_tail *t) {
  uint32_t e = r * b->restart + 1, end = e - 1 + b->restart, pos, tpos;
  if (end > b->n) end = b->n;
  TERN_TRY(restart_pos(b, r, &pos, &tpos));
  if (e >= end) {
    *index = end;
    return 0;
  }
  /* The run's keys, and the tails the entry found may have, while the
   * key is coded into digits. */
  prefetch_run(b, e, end, pos);
  uint32_t klen = lk->len;
  key_digits_t kx; /* the key's bytes from m, as digits */
  key_digits(b, lk, m, &kx);
  key_char k;
  key_char_at(b, kx.kd, klen, m, &k);
  if (b->fixed_len) return scan_entries(b, r, e, end, pos, &kx, klen, m, cur, &k, 1, index, it, t);
  return scan_entries(b, r, e, end, pos, &kx, klen, m, cur, &k, 0, index, it, t);
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
  *pd = (tern_tb_pending){r, cp + h.lcp, cp + h.rlen};
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
  return scan_run(b, pd.r, &lk, pd.m, pd.cur, index, it, t);
}

int tern_tb_lookup_begin(const tern_tb_block *b, const uint8_t *key, uint32_t klen,
                         uint32_t *index, tern_tb_iter *it, tern_tb_tail *t, tern_tb_pending *pd) {
  TERN_TRY(check_key_len(klen));
  lookup_key lk;
  key_copy(&lk, key, klen);
  int rc = lower_bound_restarts(b, &lk, index, it, t, pd);
  if (rc != TERN_TB_PENDING) return rc;
  uint32_t e = pd->r * b->restart + 1, end = e - 1 + b->restart, pos, tpos;
  if (end > b->n) end = b->n;
  if (e < end && restart_pos(b, pd->r, &pos, &tpos) == TERN_OK) prefetch_run(b, e, end, pos);
  return rc;
}

int tern_tb_lookup_finish(const tern_tb_block *b, const uint8_t *key, uint32_t klen,
                          const tern_tb_pending *pd, uint32_t *index, tern_tb_iter *it,
                          tern_tb_tail *t) {
  lookup_key lk;
  key_copy(&lk, key, klen);
  return scan_run(b, pd->r, &lk, pd->m, pd->cur, index, it, t);
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
  for (; i < t->vlen; i++, pos += 8) out[i] = (uint8_t)get(b, pos, 8);
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
  TERN_TRY(decode_tail(b, &pos, e, &t));
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
                   : decode_suffix(b, kpos, slen, dst + p));
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

/* tern_tb_resolve for a block with the pair table, g characters a code
 * (constant when inlined): the block's constants in locals, the walk, the
 * shared characters and the hit's suffix decoded in the loop, no call. */
static inline __attribute__((always_inline)) int resolve_pairs(const tern_tb_block *b,
                                                               tern_tb_iter *it, tern_tb_hits *h,
                                                               const uint32_t *ids, uint32_t n,
                                                               uint64_t base, uint32_t *done,
                                                               uint32_t g) {
  scan_consts sc;
  scan_consts_of(b, &sc, h->pad); /* sc.page for scan_read: every suffix read ends by `ends` */
  const uint8_t *page = b->page;
  const uint16_t *sbits = b->sbits;
  const uint32_t cp = b->cp, fixed = b->fixed_len, ends = b->tails_start, count = b->n;
  const uint32_t bw_plen = b->bw_plen, bw_slen = fixed ? 0 : b->bw_slen, hb = bw_plen + bw_slen;
  const uint32_t pmask = (1u << bw_plen) - 1, smask = (1u << bw_slen) - 1;
  const uint32_t R = b->restart, pow2 = (R & (R - 1)) == 0, rsh = (uint32_t)__builtin_ctz(R);
  const uint32_t pfrom = (uint32_t)(b->prefix - page);
  const int one = one_doc(b);
  /* A primary key's tails (one doc, its id its ordinal's, and an inline
   * value of one length) at fixed places: every one checked at once. */
  const uint32_t tb = (uint32_t)b->tail_bits;
  const int direct = one && b->bw_doc == 0 && b->doc_base >= 0 &&
                     b->doc_base + (int64_t)count <= (int64_t)b->f.max_doc &&
                     (uint64_t)b->tails_start + (uint64_t)count * tb <= b->used_bits;
  const uint32_t dflags = b->f.has_values ? TERN_TB_HIT_VINLINE : 0;
  const uint32_t dvlen = b->f.has_values ? b->vlen_min : 0;
  const int64_t doc_base = b->doc_base;
  restart_consts rk;
  restart_consts_of(b, &rk);
  uint32_t sp[256], pl[256], sl[256]; /* a walk stays in one run: <= 255 entries */
  uint32_t used = 0, prev = 0, j = 0;
  tern_tb_iter w = *it; /* in registers: the terms written may alias *it */
  /* Terms of one length: an entry's step over its key, by its shared
   * prefix's code alone (hb + the suffix's bits); a code that makes the
   * prefix reach the length (or pass it) steps past the key stream, so
   * the walk's one check (at > ends) catches it. */
  uint32_t adv[64];
  const int fixed_walk = fixed && bw_plen <= 6 && fixed <= TERN_TB_TERM_MAX;
  if (fixed_walk)
    for (uint32_t c = 0; c <= pmask; c++)
      adv[c] = cp + c < fixed ? hb + suffix_bits_of(fixed - cp - c, b->gdiv, g, sc.gbits)
                              : 16u * TERN_TB_PAGE;
  if (w.entry > 0) { /* the term before w.entry, to the front */
    assert(w.len <= TERN_TB_TERM_MAX);
    memmove(h->bytes, h->bytes + h->prev, w.len);
    h->prev = 0;
    used = w.len;
  }
  for (; j < n && used < TERN_TB_HITS_FILL; j++) {
    if ((uint64_t)ids[j] - base >= count) break; /* in another block (below base: wraps) */
    uint32_t t = (uint32_t)(ids[j] - base);
    if (TERN_UNLIKELY(t < w.entry))
      return tern_fail(TERN_EINVAL, "%s: terms block %llu: entry %u to resolve at entry %u of %u",
                       b->what, (unsigned long long)b->block_no, t, w.entry, count);
    uint8_t *dst = h->bytes + used;
    uint32_t r = pow2 ? t >> rsh : t / R, rs = r * R, kpos, tpos, len, from, tfrom;
    int restart = rs >= w.entry;
    uint32_t rfrom = 0;
    if (restart) { /* from t's restart (its bytes copied as far as t needs them) */
      uint32_t rlen;
      TERN_TRY(restart_at(b, &rk, r, &rfrom, &rlen, &kpos, &tpos));
      len = cp + rlen;
      from = tfrom = rs;
      if (t == rs) {
        page_copy(dst, page, pfrom, cp);
        page_copy(dst + cp, page, rfrom, rlen);
      }
    } else { /* in the run of the entry last resolved: from it */
      kpos = w.kpos;
      tpos = w.pos;
      len = w.len;
      from = w.entry - 1;
      tfrom = w.entry;
    }
    if (t != from || !restart) {
      /* The entries from + 1 .. t by their lengths; t's suffix then. */
      uint32_t nw = t - from, at = kpos, l = len, p = 0, s = 0;
      if (fixed_walk) {
        if (TERN_UNLIKELY(l != fixed)) return corrupt(b, "term of another length");
        for (uint32_t k = 1; k <= nw; k++) {
          uint32_t byte = at >> 3;
          uint64_t v = TERN_LIKELY(byte <= TERN_TB_PAGE - 8) ? tern_bits_le64(page + byte)
                                                             : tail64(page, byte);
          uint32_t c = (uint32_t)(v >> (at & 7)) & pmask;
          sp[k] = at + hb;
          pl[k] = cp + c;
          at += adv[c];
          if (TERN_UNLIKELY(at > ends)) return corrupt(b, "bad entry prefix, or key past the end");
        }
        p = pl[nw];
        s = fixed - p;
        l = fixed;
      } else
      for (uint32_t k = 1; k <= nw; k++) {
        TERN_TRY(entry_lengths(b, page, at, l, cp, fixed, bw_plen, hb, pmask, smask, &p, &s));
        at += hb;
        sp[k] = at;
        pl[k] = p;
        sl[k] = s;
        at += TERN_LIKELY(s < TERN_TB_SBITS) ? sbits[s] : suffix_bits_of(s, b->gdiv, g, sc.gbits);
        l = p + s;
        if (TERN_UNLIKELY(at > ends)) return corrupt(b, "key past the end of the key stream");
      }
      /* t shares p bytes with t - 1: those from the term walked from
       * (whole in dst from a restart, else the previous hit's), then
       * those each walked entry supplied that no later one replaced. */
      if (!restart) {
        copy_shared(dst, h->bytes + prev, p, 0);
      } else { /* t's first p bytes the restart has: the block prefix, then its key's */
        uint32_t q = p < len ? p : len;
        page_copy(dst, page, pfrom, q < cp ? q : cp);
        if (q > cp) page_copy(dst + cp, page, rfrom, q - cp);
      }
      int bad = 0;
      for (uint32_t k = nw - 1, need = p; k >= 1 && need > 0; k--) {
        if (pl[k] >= need) continue;
        first_chars(&sc, sp[k], fixed_walk ? fixed - pl[k] : sl[k], need - pl[k], dst + pl[k], g,
                    &bad);
        need = pl[k];
      }
      (void)scan_suffix(&sc, sp[nw], s, dst + p, g, &bad);
      if (TERN_UNLIKELY(bad))
        return corrupt(b, bad == 2 ? "key past the end of the key stream"
                                   : "character outside the block alphabet");
      kpos = at;
      len = l;
    }
    tern_tb_hit *hit = &h->hit[j];
    if (TERN_LIKELY(direct)) {
      hit->doc = (uint32_t)(doc_base + t);
      hit->flags = dflags;
      hit->vlen = dvlen;
      hit->vbit = ends + t * tb;
      w.pos = hit->vbit + tb;
    } else {
      if (TERN_LIKELY(b->tail_bits >= 0))
        tpos = ends + t * tb;
      else
        for (uint32_t k = tfrom; k < t && tpos <= b->used_bits; k++) tpos = skip_tail(b, tpos);
      if (TERN_UNLIKELY(tpos > b->used_bits)) return corrupt(b, "entry past the end of the block");
      TERN_TRY(hit_tail(b, tpos, t, one, hit, &w.pos));
    }
    w.entry = t + 1;
    w.kpos = kpos;
    w.len = len;
    if (TERN_UNLIKELY(t + 1 == count && (kpos + 7) / 8 * 8 != ends))
      return corrupt(b, "key stream length differs from its entries");
    hit->off = (uint16_t)used;
    hit->len = (uint16_t)len;
    prev = used;
    used += len;
  }
  *it = w;
  h->n = j;
  h->prev = prev;
  h->direct = direct;
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
