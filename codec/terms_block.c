/* SPDX-License-Identifier: MIT */
/*
 * terms_block.c — opens a terms block (terms_block.h, docs/FORMAT.md):
 * its header, alphabet and digit tables, saved headers; decodes its
 * entries one at a time (tern_tb_iter_next) and the parts the other
 * readers share out of line (a tail, a suffix, a restart key's term).
 * The search is in terms_block_lookup.c, batched and positioned decoding
 * in terms_block_scan.c, hits by rank in terms_block_hits.c; what they
 * all read inline, terms_block_impl.h.
 */
#include "codec/terms_block_impl.h"

#include <pthread.h>
#include <stdatomic.h>

#define WMAX_LEN 11u /* lengths are at most 1024 */
#define WMAX_U32 32u
#define WMAX_DOC 33u /* doc - index spans 2^32 + 4096 */
#define WMAX_OFF 48u

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

/* ceil(2^16 / g) for each group size g: suffix_bits divides by g with it. */
static const uint32_t g_gdiv[TERN_TB_GROUP_MAX + 1] = {0, 65536, 32768, 21846, 16384, 13108, 10923};

/* Powers of every alphabet size and their reciprocals, and suffix_bits of
 * the short suffixes, per alphabet size and group: a block only points at
 * its row.  Each row is filled the first time a block has that alphabet
 * size (not all at start: a fresh process that reads one block pays for
 * its own row only), and a row's tables lie together, its flag with them,
 * so that filling one faults in the one or two pages it spans instead of
 * one page per table. */
typedef struct tb_row {
  atomic_int ready;
  uint8_t gmax;                          /* the largest group that decodes exactly: K^(g+1) <= 2^32 */
  uint8_t bits[TERN_TB_GROUP_MAX + 1];
  uint32_t rmask[TERN_TB_GROUP_MAX + 1]; /* (1 << bits) - 1: a code's mask */
  uint64_t pow[TERN_TB_GROUP_MAX + 1], rpow[TERN_TB_GROUP_MAX + 1];
  uint16_t sbits[TERN_TB_GROUP_MAX + 1][TERN_TB_SBITS];
} tb_row;
static tb_row g_rows[257];
static pthread_mutex_t g_row_lock = PTHREAD_MUTEX_INITIALIZER;

/* Row k of every table, once (the first block of alphabet size k). */
static __attribute__((cold, noinline)) void fill_row(uint32_t k) {
  tb_row *w = &g_rows[k];
  pthread_mutex_lock(&g_row_lock);
  if (!atomic_load_explicit(&w->ready, memory_order_relaxed)) {
    uint64_t p = 1;
    for (uint32_t j = 0; j <= TERN_TB_GROUP_MAX; j++, p *= k) {
      w->pow[j] = p;
      w->bits[j] = (uint8_t)tern_bitwidth(p - 1);
      w->rmask[j] = (uint32_t)(((uint64_t)1 << w->bits[j]) - 1);
      w->rpow[j] = p == 1 ? 0 : UINT64_MAX / p + 1;
      if (j >= 1 && p * k <= (1ull << 32)) w->gmax = (uint8_t)j;
    }
    for (uint32_t g = 1; g <= TERN_TB_GROUP_MAX; g++)
      for (uint32_t n = 0; n < TERN_TB_SBITS; n++)
        w->sbits[g][n] = (uint16_t)suffix_bits_of(n, g_gdiv[g], g, w->bits);
    atomic_store_explicit(&w->ready, 1, memory_order_release);
  }
  pthread_mutex_unlock(&g_row_lock);
}

const uint32_t *tern_tb_rmask_row(uint32_t k) { return g_rows[k].rmask; }

/* Bits of each code size; the group must decode exactly (K^(g+1) <= 2^32). */
static int set_digit_coding(tern_tb_block *b) {
  uint32_t k = b->nsym ? b->nsym : 1;
  assert(k <= 256);
  const tb_row *w = &g_rows[k];
  if (TERN_UNLIKELY(!atomic_load_explicit(&w->ready, memory_order_acquire))) fill_row(k);
  if (b->group > w->gmax) return corrupt(b, "character group too large for the alphabet");
  b->gbits = w->bits;
  b->pow = w->pow;
  b->rpow = w->rpow;
  b->gdiv = g_gdiv[b->group];
  b->sbits = w->sbits[b->group];
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

int tern_tb_decode_tail(const tern_tb_block *b, uint32_t *pos, uint32_t idx, tern_tb_tail *t) {
  return tail_decode(b, pos, idx, t);
}

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

static int decode_suffix_pairs(const tern_tb_block *b, uint32_t sp, uint32_t slen, uint8_t *out) {
  return suffix_pairs(b, sp, slen, out, 0);
}

/* Decodes slen suffix characters at sp into out. */
int tern_tb_decode_suffix(const tern_tb_block *b, uint32_t sp, uint32_t slen, uint8_t *out) {
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

/* ------------------------------------------------------------- restarts */

static inline int bytes_cmp(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen) {
  uint32_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  return c ? c : (alen > blen) - (alen < blen);
}

/* Restart entry r's term into dst (its length in *len), with the checks
 * of the key side: it starts where the stream stands (kpos), and restart
 * keys ascend (the lookup's binary search relies on their order).  *tpos:
 * where its tail starts (NULL: not wanted). */
int tern_tb_restart_term(const tern_tb_block *b, uint32_t r, uint32_t kpos, uint8_t *dst,
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
    TERN_TRY(tern_tb_restart_term(b, e / b->restart, it->kpos, term, &it->len, &tpos));
    if (tpos != it->pos) return corrupt(b, "restart position differs from the stream");
  } else {
    uint32_t p, slen;
    TERN_TRY(read_prefix(b, &it->kpos, it->len, &p, &slen));
    /* The pair table's decode inline: it is most of a scan's step. */
    TERN_TRY(b->pair ? suffix_pairs(b, it->kpos, slen, term + p, TERN_TB_TERM_MAX - p)
                     : tern_tb_decode_suffix(b, it->kpos, slen, term + p));
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
