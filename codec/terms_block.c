/*
 * terms_block.c — reads a terms block (terms_block.h, docs/FORMAT.md).
 *
 * The lookup (tern_tb_lower_bound) compares the key with the block prefix,
 * binary-searches the restart heads for the last restart surely below the
 * key, and scans entries from there without reconstructing terms.  It
 * keeps m, the length of the prefix the current term (below the key)
 * shares with the key.  The next term shares p bytes with the current one:
 *   p > m   it agrees with the current term where that one is below the
 *           key: it is smaller too, m unchanged; its suffix is skipped;
 *   p < m   it differs from the current term at byte p, upward, where the
 *           current term equals the key: it is greater — the search ends;
 *   p == m  its suffix is compared, usually by its first code alone (the
 *           codes starting with the key's character form one interval),
 *           otherwise character by character as far as it agrees.
 * A restart is compared from the block prefix, the one prefix it surely
 * shares with the key.  Characters are decoded only to be compared.
 */
#include "codec/terms_block.h"

#include "codec/coding.h"
#include "codec/status.h"

#include <pthread.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define WMAX_LEN 11u /* lengths are at most 1024 */
#define WMAX_U32 32u
#define WMAX_DOC 33u /* doc - index spans 2^32 + 4096 */
#define WMAX_OFF 48u

static int corrupt(const tern_tb_block *b, const char *why) {
  return tern_fail(TERN_ECORRUPT, "%s: terms block %llu: %s", b->what,
                   (unsigned long long)b->block_no, why);
}

static inline uint64_t get(const tern_tb_block *b, uint32_t pos, unsigned w) {
  return tern_bits_get(b->page, pos, w);
}

static inline uint32_t suffix_bits(const tern_tb_block *b, uint32_t slen) {
  uint32_t q = (slen * b->gdiv) >> 16; /* slen / g, exact for slen <= 1024 */
  return q * b->gbits[b->group] + b->gbits[slen - q * b->group];
}

__extension__ typedef unsigned __int128 tb_u128;

/* code / K^j, exact for every code below 2^32 (K^j < 2^32). */
static inline uint32_t digit_div(const tern_tb_block *b, uint32_t code, uint32_t j) {
  return (uint32_t)(((tb_u128)code * b->rpow[j]) >> 64);
}

static inline int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  if (TERN_LIKELY(*p < end && **p < 0x80)) { /* header bases are mostly small */
    *v = *(*p)++;
    return 0;
  }
  return tern_get_varint(p, end, v);
}

/* sym[0..hi-lo] = lo..hi, eight at a time (sym has 8 bytes of slack). */
static void fill_range(uint8_t *sym, uint32_t lo, uint32_t hi) {
  for (uint32_t c = lo; c <= hi; c += 8) {
    uint8_t v[8];
    for (uint32_t i = 0; i < 8; i++) v[i] = (uint8_t)(c + i);
    memcpy(sym + (c - lo), v, 8);
  }
}

/* Checks the alphabet and counts it; the tables wait for tern_tb_tables. */
static int parse_alphabet(tern_tb_block *b, const uint8_t **pp) {
  const uint8_t *p = *pp;
  uint32_t d = 0;
  b->tables = 0;
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

void tern_tb_tables(tern_tb_block *b) {
  if (b->tables) return;
  const uint8_t *p = b->alpha;
  uint32_t d = 0;
  memset(b->dig, 0xff, sizeof b->dig); /* TERN_TB_NODIGIT */
  if (b->page[0] & TERN_TB_RANGES) {
    for (uint32_t i = 0; i < b->nranges; i++, p += 2) {
      uint32_t lo = p[0], hi = p[1];
      uint16_t *dig = b->dig, next = (uint16_t)d;
      fill_range(b->sym + d, lo, hi);
      for (uint32_t c = lo; c <= hi; c++) dig[c] = next++;
      d += hi - lo + 1;
    }
  } else {
    for (uint32_t word = 0; word < 4; word++) {
      uint64_t bits = tern_load64(p + 8 * word);
      while (bits) {
        unsigned c = word * 64 + (unsigned)__builtin_ctzll(bits);
        b->sym[d] = (uint8_t)c;
        b->dig[c] = (uint16_t)d++;
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

/* Powers of every alphabet size and their reciprocals, computed once: a
 * block only points at its row. */
static uint64_t g_pow[257][TERN_TB_GROUP_MAX + 1], g_rpow[257][TERN_TB_GROUP_MAX];
static uint8_t g_bits[257][TERN_TB_GROUP_MAX + 1];
static pthread_once_t g_pow_once = PTHREAD_ONCE_INIT;

static void init_powers(void) {
  for (uint64_t k = 1; k <= 256; k++) {
    uint64_t p = 1;
    for (uint32_t j = 0; j <= TERN_TB_GROUP_MAX; j++, p *= k) {
      g_pow[k][j] = p;
      g_bits[k][j] = (uint8_t)tern_bitwidth(p - 1);
      if (j < TERN_TB_GROUP_MAX) g_rpow[k][j] = p == 1 ? 0 : UINT64_MAX / p + 1;
    }
  }
}

/* Bits of each code size; the group must decode exactly (K^(g+1) <= 2^32). */
static int set_digit_coding(tern_tb_block *b) {
  uint32_t k = b->nsym ? b->nsym : 1;
  pthread_once(&g_pow_once, init_powers);
  if (g_pow[k][b->group] * k > (1ull << 32))
    return corrupt(b, "character group too large for the alphabet");
  memcpy(b->gbits, g_bits[k], sizeof b->gbits);
  for (uint32_t r = b->group + 1; r <= TERN_TB_GROUP_MAX; r++) b->gbits[r] = 0;
  b->pow = g_pow[k];
  b->rpow = g_rpow[k];
  b->gdiv = (65536 + b->group - 1) / b->group;
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

int tern_tb_open_lookup(tern_tb_block *b, const uint8_t *page, const tern_tb_field *f,
                        uint32_t expect_n, const char *what, uint64_t block_no) {
  /* The header spans the first lines; ask for them all now rather than
   * one miss at a time. */
  __builtin_prefetch(page + 64);
  __builtin_prefetch(page + 128);
  b->page = page;
  b->what = what;
  b->block_no = block_no;
  b->f = *f;
  if (page[0] & ~(TERN_TB_FIXED_LEN | TERN_TB_RANGES)) return corrupt(b, "unknown flags");
  b->restart = page[1];
  b->n = tern_load16(page + 2);
  b->entries_start = tern_load16(page + 4);
  b->used_bits = tern_load16(page + 6);
  b->group = page[18];
  b->head = page[19];
  if (b->restart == 0) return corrupt(b, "restart interval 0");
  if (b->n == 0 || b->n > TERN_TB_MAX_ENTRIES) return corrupt(b, "bad entry count");
  if (expect_n && b->n != expect_n) return corrupt(b, "entry count differs from the terms index");
  if (b->group < 1 || b->group > TERN_TB_GROUP_MAX) return corrupt(b, "bad character group");
  if (b->head < 1 || b->head > 4) return corrupt(b, "bad head size");
  b->nrestarts = (b->n + b->restart - 1) / b->restart;
  uint8_t *ws[10] = {&b->bw_rslen, &b->bw_plen, &b->bw_slen, &b->bw_df,  &b->bw_doc,
                     &b->bw_gap,   &b->bw_off,  &b->bw_len,  &b->bw_vlen, &b->bw_voff};
  static const uint8_t wmax[10] = {WMAX_LEN, WMAX_LEN, WMAX_LEN, WMAX_U32, WMAX_DOC,
                                   WMAX_U32, WMAX_OFF, WMAX_OFF, WMAX_U32, WMAX_OFF};
  unsigned over = 0;
  for (int i = 0; i < 10; i++) {
    *ws[i] = page[8 + i];
    over |= *ws[i] > wmax[i];
  }
  if (over) return corrupt(b, "column width out of range");
  const uint8_t *p = page + TERN_TB_HEADER_FIXED, *end = page + TERN_TB_PAGE;
  TERN_TRY(parse_alphabet(b, &p));
  TERN_TRY(set_digit_coding(b));
  uint64_t v[8] = {0};
  int fixed = page[0] & TERN_TB_FIXED_LEN;
  for (int i = fixed ? 0 : 1; i < 8; i++)
    if (get_varint(&p, end, &v[i]) != 0) return corrupt(b, "bad header varint");
  if (fixed && (v[0] < 1 || v[0] > TERN_TB_TERM_MAX)) return corrupt(b, "bad fixed term length");
  if (fixed && (b->bw_rslen || b->bw_slen)) return corrupt(b, "fixed length with length columns");
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
  size_t rest = (size_t)b->cp + (size_t)b->nrestarts * b->head + 2 * (size_t)(b->nrestarts - 1);
  if ((size_t)(end - p) < rest) return corrupt(b, "header overflows the block");
  b->prefix = p;
  b->heads = p + b->cp;
  b->roff = b->heads + (size_t)b->nrestarts * b->head;
  p += rest;
  if ((uint32_t)(p - page) * 8 != b->entries_start || b->entries_start > b->used_bits ||
      b->used_bits > 8u * TERN_TB_PAGE)
    return corrupt(b, "bad section bounds");
  set_tail_bits(b);
  return TERN_OK;
}

int tern_tb_open(tern_tb_block *b, const uint8_t *page, const tern_tb_field *f, uint32_t expect_n,
                 const char *what, uint64_t block_no) {
  TERN_TRY(tern_tb_open_lookup(b, page, f, expect_n, what, block_no));
  tern_tb_tables(b);
  return TERN_OK;
}

/* ------------------------------------------------------------ entry parts */

/* Decodes an entry's tail at *pos (entry `idx`), advancing *pos. */
static int decode_tail(const tern_tb_block *b, uint32_t *pos, uint32_t idx, tern_tb_tail *t) {
  uint32_t at = *pos;
  uint64_t df = b->df_min + get(b, at, b->bw_df);
  at += b->bw_df;
  if (df > UINT32_MAX) return corrupt(b, "df overflows");
  t->df = (uint32_t)df;
  t->pulsed = df <= b->f.threshold;
  if (t->pulsed) {
    if (df > TERN_TB_DOCS_MAX) return corrupt(b, "too many pulsed docs");
    int64_t d = b->doc_base + (int64_t)get(b, at, b->bw_doc) + idx;
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
    uint64_t vlen = b->vlen_min + get(b, at, b->bw_vlen);
    at += b->bw_vlen;
    if (vlen > (16u << 20)) return corrupt(b, "value too long");
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

/* Decodes slen suffix characters at sp into out. */
static int decode_suffix(const tern_tb_block *b, uint32_t sp, uint32_t slen, uint8_t *out) {
  for (uint32_t i = 0; i < slen; i += b->group) {
    uint32_t r = slen - i < b->group ? slen - i : b->group;
    uint32_t code = (uint32_t)get(b, sp, b->gbits[r]);
    sp += b->gbits[r];
    /* q[j] = code / K^j, each from code alone, so the divisions overlap
     * instead of waiting on one another; digit j is q[j] - K * q[j+1]. */
    uint32_t q[TERN_TB_GROUP_MAX + 1];
    q[0] = code;
    for (uint32_t j = 1; j < r; j++) q[j] = digit_div(b, code, j);
    q[r] = 0;
    if (q[r - 1] >= b->nsym) return corrupt(b, "character outside the block alphabet");
    for (uint32_t j = r; j-- > 0;) *out++ = b->sym[q[j] - b->nsym * q[j + 1]];
  }
  return TERN_OK;
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
static __attribute__((noinline)) int cmp_suffix(const tern_tb_block *b, uint32_t sp,
                                                uint32_t slen, const uint16_t *kd,
                                                uint32_t klen, uint32_t *m) {
  uint32_t at = *m, end = at + slen;
  while (at < end) {
    uint32_t r = end - at < b->group ? end - at : b->group;
    uint32_t code = (uint32_t)get(b, sp, b->gbits[r]);
    sp += b->gbits[r];
    if (at + r <= klen) {
      uint32_t kc = 0, absent = 0;
      for (uint32_t i = 0; i < r; i++) {
        absent |= kd[at + i];
        kc = kc * b->nsym + kd[at + i];
      }
      if (!(absent & KEY_ABSENT)) {
        if (code == kc) {
          at += r;
          continue;
        }
        if (code > kc) return 1;
      }
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

/* The key's character at m, as first digits compare with it. */
typedef struct key_char {
  uint32_t rank, in, past; /* past: the key ends at m */
  uint32_t at;             /* m */
} key_char;

static inline void key_char_at(const uint16_t *kd, uint32_t klen, uint32_t m, key_char *k) {
  k->past = m >= klen;
  k->at = m;
  k->rank = k->in = 0;
  if (k->past) return;
  k->rank = kd[m] & KEY_RANK;
  k->in = !(kd[m] & KEY_ABSENT);
}

/* Compares a suffix starting at the key's position m (the term's first m
 * bytes equal the key's).  Usually decided by the first character, read
 * from the first code without dividing it: the codes whose first digit is
 * the key's character span [rank * K^(r-1), (rank + 1) * K^(r-1)). */
static inline int cmp_at(const tern_tb_block *b, uint32_t sp, uint32_t slen, const uint16_t *kd,
                         uint32_t klen, uint32_t *m, const key_char *k) {
  if (k->past) return 1;
  uint32_t r = slen < b->group ? slen : b->group;
  uint64_t code = get(b, sp, b->gbits[r]), span = b->pow[r - 1], lo = k->rank * span;
  if (code < lo) return -1;
  if (code >= lo + (k->in ? span : 0)) return 1;
  return cmp_suffix(b, sp, slen, kd, klen, m);
}

static inline uint32_t restart_off(const tern_tb_block *b, uint32_t r) {
  return r ? tern_load16(b->roff + 2 * (r - 1)) : b->entries_start;
}

static int check_restart_off(const tern_tb_block *b, uint32_t off) {
  if (off < b->entries_start || off > b->used_bits)
    return corrupt(b, "restart entry position out of range");
  return TERN_OK;
}

/* A restart entry's suffix length (its term is the block prefix and the
 * suffix) at *pos. */
static inline int read_restart(const tern_tb_block *b, uint32_t *pos, uint32_t *slen) {
  if (b->fixed_len) {
    *slen = b->fixed_len - b->cp;
  } else {
    *slen = (uint32_t)get(b, *pos, b->bw_rslen);
    *pos += b->bw_rslen;
    if (TERN_UNLIKELY(b->cp + *slen > TERN_TB_TERM_MAX)) return corrupt(b, "bad restart length");
  }
  return TERN_OK;
}

/* A non-restart entry's shared prefix and suffix length at *pos. */
static inline int read_prefix(const tern_tb_block *b, uint32_t *pos, uint32_t cur, uint32_t *p,
                              uint32_t *slen) {
  uint32_t at = *pos;
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

/* The head of a term (its bytes after the block prefix), as stored. */
static inline uint32_t head_of(const tern_tb_block *b, const uint8_t *t, uint32_t len) {
  uint32_t h = 0;
  for (uint32_t k = 0; k < b->head; k++) h = h << 8 | (b->cp + k < len ? t[b->cp + k] : 0u);
  return h;
}

static inline uint32_t stored_head(const tern_tb_block *b, uint32_t r) {
  const uint8_t *p = b->heads + (size_t)r * b->head;
  if (TERN_LIKELY(b->head == 4)) return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
  uint32_t h = 0;
  for (uint32_t k = 0; k < b->head; k++) h = h << 8 | p[k];
  return h;
}

/* ------------------------------------------------------------- iteration */

int tern_tb_iter_restart(const tern_tb_block *b, tern_tb_iter *it, uint32_t r, uint8_t *term) {
  if (r >= b->nrestarts) return corrupt(b, "restart out of range");
  memcpy(term, b->prefix, b->cp);
  it->entry = r * b->restart;
  it->len = b->cp;
  it->pos = restart_off(b, r);
  return check_restart_off(b, it->pos);
}

int tern_tb_iter_next(const tern_tb_block *b, tern_tb_iter *it, uint8_t *term, tern_tb_tail *t) {
  if (it->entry >= b->n) return TERN_NOTFOUND;
  if (TERN_UNLIKELY(!b->tables))
    return tern_fail(TERN_EINVAL, "terms block: decoding without tern_tb_tables");
  uint32_t e = it->entry, p = 0, slen = 0;
  if (e % b->restart == 0) {
    uint32_t r = e / b->restart;
    if (restart_off(b, r) != it->pos) return corrupt(b, "restart position differs from the stream");
    TERN_TRY(read_restart(b, &it->pos, &slen));
    p = b->cp;
    memcpy(term, b->prefix, b->cp);
  } else {
    TERN_TRY(read_prefix(b, &it->pos, it->len, &p, &slen));
  }
  TERN_TRY(decode_suffix(b, it->pos, slen, term + p));
  it->pos += suffix_bits(b, slen);
  it->len = p + slen;
  if (e % b->restart == 0 && head_of(b, term, it->len) != stored_head(b, e / b->restart))
    return corrupt(b, "restart head differs from its term");
  TERN_TRY(decode_tail(b, &it->pos, e, t));
  it->entry = e + 1;
  return TERN_OK;
}

/* Skipping to an entry decodes only the characters that survive in the
 * term before it: the entries from the restart are walked by their
 * lengths alone (prefix, suffix length, suffix and tail widths), then the
 * bytes entry `index` shares with the one before it are assembled
 * backwards, each entry supplying those past its own shared prefix that
 * no later entry replaced — typically one suffix's first characters
 * instead of half a restart interval of whole suffixes.  term[] then
 * holds what the next tern_tb_iter_next needs, not the whole previous
 * term. */
int tern_tb_iter_seek(const tern_tb_block *b, tern_tb_iter *it, uint32_t index, uint8_t *term) {
  if (index >= b->n) return corrupt(b, "entry out of range");
  TERN_TRY(tern_tb_iter_restart(b, it, index / b->restart, term));
  uint32_t n = index - it->entry, pos = it->pos, len = b->cp;
  uint32_t sp[256], pl[256], sl[256]; /* n < restart interval <= 255 */
  for (uint32_t k = 0; k < n; k++) {
    uint32_t p = b->cp, slen = 0;
    if (k == 0)
      TERN_TRY(read_restart(b, &pos, &slen));
    else
      TERN_TRY(read_prefix(b, &pos, len, &p, &slen));
    sp[k] = pos;
    pl[k] = p;
    sl[k] = slen;
    pos = skip_tail(b, pos + suffix_bits(b, slen));
    len = p + slen;
    if (TERN_UNLIKELY(pos > 8 * TERN_TB_PAGE)) return corrupt(b, "entry past the page");
  }
  /* Entry `index` keeps only the bytes it shares with entry index-1. */
  uint32_t need = len;
  if (n > 0) {
    uint32_t peek = pos, slen;
    TERN_TRY(read_prefix(b, &peek, len, &need, &slen));
  }
  uint8_t tmp[TERN_TB_TERM_MAX + TERN_TB_GROUP_MAX];
  for (uint32_t k = n; k-- > 0 && need > b->cp;) {
    if (pl[k] >= need) continue;
    uint32_t m = need - pl[k], whole = (m + b->group - 1) / b->group * b->group;
    TERN_TRY(decode_suffix(b, sp[k], whole < sl[k] ? whole : sl[k], tmp));
    memcpy(term + pl[k], tmp, m);
    need = pl[k];
  }
  it->entry = index;
  it->pos = pos;
  it->len = len;
  return TERN_OK;
}

/* ---------------------------------------------------------------- lookup */

/* kd[i] = key_digit(key[i]) for i in [from, klen).  With ranges (the
 * common alphabet) 16 bytes at a time: a byte's rank is the sum over the
 * ranges of min(max(c - lo, 0), hi - lo + 1), and it is in the alphabet
 * when (c - lo) mod 256 <= hi - lo for some range. */
static void key_digits(const tern_tb_block *b, const uint8_t *key, uint32_t from, uint32_t klen,
                       uint16_t *kd) {
#if defined(__SSE2__)
  if (b->page[0] & TERN_TB_RANGES) {
    for (uint32_t i = from; i < klen; i += 16) {
      uint8_t chunk[16] = {0};
      uint32_t n = klen - i < 16 ? klen - i : 16;
      memcpy(chunk, key + i, n);
      __m128i c = _mm_loadu_si128((const __m128i *)chunk), r = _mm_setzero_si128();
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
      _mm_storeu_si128((__m128i *)(kd + i), lo16);
      _mm_storeu_si128((__m128i *)(kd + i + 8), hi16);
    }
    return;
  }
#endif
  for (uint32_t i = from; i < klen; i++) kd[i] = (uint16_t)key_digit(b, key[i]);
}

static int found(const tern_tb_block *b, uint32_t e, uint32_t pos, uint32_t klen, uint32_t *index,
                 tern_tb_iter *it, tern_tb_tail *t) {
  TERN_TRY(decode_tail(b, &pos, e, t));
  it->entry = e + 1;
  it->pos = pos;
  it->len = klen;
  *index = e;
  return 1;
}

/* The last restart whose head is below the key's: that restart is below
 * the key, and so is every entry before it.  0 when none is. */
static inline uint32_t restart_below(const tern_tb_block *b, uint32_t kh) {
  uint32_t lo = 0, n = b->nrestarts;
  while (n > 1) {
    uint32_t half = n / 2;
    if (stored_head(b, lo + half) < kh) lo += half;
    n -= half;
  }
  return lo;
}

/* Compares restart t's whole term with the key (given as digits after the
 * block prefix): <0, 0, >0. */
static int cmp_restart(const tern_tb_block *b, uint32_t t, const uint16_t *kd, uint32_t klen,
                       int *c) {
  uint32_t pos = restart_off(b, t), slen = 0, m = b->cp;
  TERN_TRY(check_restart_off(b, pos));
  TERN_TRY(read_restart(b, &pos, &slen));
  if (slen == 0) {
    *c = klen == b->cp ? 0 : -1; /* the term is the prefix itself */
    return TERN_OK;
  }
  key_char k;
  key_char_at(kd, klen, m, &k);
  *c = cmp_at(b, pos, slen, kd, klen, &m, &k);
  return TERN_OK;
}

/* When several restarts have the key's head (keys sharing long prefixes:
 * paths, URLs, scoped names), the heads alone would start the scan at the
 * first of them and walk all their runs.  Their whole terms, coded from
 * the block prefix, are binary-searched instead, so the scan covers one
 * run whatever the keys' shape.  *r: the restart the heads gave (the last
 * one below the key's head, or 0); moved to the last restart whose term
 * is <= the key. */
static int restart_among_ties(const tern_tb_block *b, uint32_t kh, const uint16_t *kd,
                              uint32_t klen, uint32_t *r) {
  uint32_t first = *r + (stored_head(b, *r) < kh); /* the first restart whose head may be kh */
  if (first >= b->nrestarts || stored_head(b, first) != kh) return TERN_OK;
  uint32_t a = first + 1, z = b->nrestarts; /* past the last restart whose head is kh */
  while (a < z) {
    uint32_t mid = a + (z - a) / 2;
    if (stored_head(b, mid) == kh) a = mid + 1;
    else z = mid;
  }
  uint32_t best = *r; /* the last restart whose term is <= key, among first .. a-1 */
  for (z = a, a = first; a < z;) {
    uint32_t mid = a + (z - a) / 2;
    int c;
    TERN_TRY(cmp_restart(b, mid, kd, klen, &c));
    if (c <= 0) {
      best = mid;
      a = mid + 1;
    } else {
      z = mid;
    }
  }
  *r = best;
  return TERN_OK;
}

/* Whether a non-restart entry's size depends only on its stored
 * shared-prefix length (fixed-length terms, equal tails): the common case
 * of primary keys, where a skipped entry costs one read of that length.
 * (Computed per skipped entry: a table of every length cost more to fill
 * than the ~16 entries of a scan use.) */
static inline int sized_by_prefix(const tern_tb_block *b) {
  return b->fixed_len && b->tail_bits >= 0;
}

int tern_tb_lower_bound(const tern_tb_block *b, const uint8_t *key, uint32_t klen, uint32_t *index,
                        tern_tb_iter *it, tern_tb_tail *t) {
  /* Every term starts with the block prefix. */
  uint32_t cpn = klen < b->cp ? klen : b->cp;
  int c = cpn ? memcmp(key, b->prefix, cpn) : 0;
  if (c < 0 || (c == 0 && klen < b->cp)) {
    *index = 0;
    return 0;
  }
  if (c > 0) {
    *index = b->n;
    return 0;
  }
  uint16_t kd[TERN_TB_TERM_MAX + 16]; /* the key's bytes after the prefix, as digits */
  key_digits(b, key, b->cp, klen, kd);
  uint32_t kh = head_of(b, key, klen), r = restart_below(b, kh);
  TERN_TRY(restart_among_ties(b, kh, kd, klen, &r));
  uint32_t e = r * b->restart, pos = restart_off(b, r);
  TERN_TRY(check_restart_off(b, pos));
  __builtin_prefetch(b->page + (pos >> 3) + 64);
  int fast = sized_by_prefix(b);
  /* Scan from that restart.  m: the prefix the current term (below the
   * key) shares with the key; cur: its length. */
  uint32_t m = b->cp, cur = 0, to_restart = 0;
  key_char k;
  key_char_at(kd, klen, m, &k);
  for (; e < b->n; e++, to_restart--) {
    if (TERN_UNLIKELY(pos > b->used_bits)) return corrupt(b, "entry past the end of the block");
    uint32_t p = 0, slen = 0;
    if (to_restart == 0) {
      /* Restarts share only the block prefix for sure: compare from there. */
      to_restart = b->restart;
      TERN_TRY(read_restart(b, &pos, &slen));
      p = b->cp;
      if (m != p) {
        m = p;
        key_char_at(kd, klen, m, &k);
      }
      c = slen == 0 ? (klen == p ? 0 : -1) /* the term is the prefix itself */
                    : cmp_at(b, pos, slen, kd, klen, &m, &k);
    } else if (fast) {
      uint32_t v = (uint32_t)get(b, pos, b->bw_plen);
      p = b->cp + v;
      if (p > m) { /* below the key like the previous term: skip it */
        if (TERN_UNLIKELY(p >= b->fixed_len)) return corrupt(b, "entry suffix empty");
        pos += b->bw_plen + suffix_bits(b, b->fixed_len - p) + (uint32_t)b->tail_bits;
        continue;
      }
      if (p < m) {
        *index = e;
        return 0;
      }
      if (TERN_UNLIKELY(p >= b->fixed_len)) return corrupt(b, "entry suffix empty");
      pos += b->bw_plen;
      slen = b->fixed_len - p;
      c = cmp_at(b, pos, slen, kd, klen, &m, &k);
    } else {
      TERN_TRY(read_prefix(b, &pos, cur, &p, &slen));
      c = p > m ? -1 : p < m ? 1 : cmp_at(b, pos, slen, kd, klen, &m, &k);
    }
    if (c > 0) {
      *index = e;
      return 0;
    }
    pos += suffix_bits(b, slen);
    cur = p + slen;
    if (c == 0) return found(b, e, pos, klen, index, it, t);
    if (m != k.at) key_char_at(kd, klen, m, &k);
    pos = skip_tail(b, pos);
  }
  if (pos > b->used_bits) return corrupt(b, "entry past the end of the block");
  *index = b->n;
  return 0;
}

void tern_tb_copy_value(const tern_tb_block *b, const tern_tb_tail *t, uint8_t *out) {
  uint32_t pos = t->vbit, i = 0;
  for (; i + 7 <= t->vlen; i += 7, pos += 56) {
    uint64_t v = get(b, pos, 56);
    for (int q = 0; q < 7; q++) out[i + q] = (uint8_t)(v >> (8 * q));
  }
  for (; i < t->vlen; i++, pos += 8) out[i] = (uint8_t)get(b, pos, 8);
}
