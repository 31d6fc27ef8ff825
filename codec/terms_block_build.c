/* SPDX-License-Identifier: MIT */
/*
 * terms_block_build.c — fills a terms block (terms_block.h).
 *
 * A block's size depends on its per-column widths, its common prefix and
 * its alphabet, which depend on every entry, so entries are kept raw until
 * the block is finished.  Whether one more entry fits is decided from
 * running statistics (the extremes of each column, the counts that
 * multiply each width, the alphabet, the suffix lengths by group size):
 * the exact encoded size is a closed formula of them (block_bits), so
 * adding is O(1).  Restart keys are plain bytes (outside the alphabet), so
 * a shorter common prefix only lengthens them by a known amount each.
 */
#include "codec/terms_block.h"

#include "codec/coding.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

/* Suffix lengths, as the cost of coding them in groups of g depends on. */
typedef struct tb_lens {
  uint64_t groups[TERN_TB_GROUP_MAX + 1];                 /* whole groups of g */
  uint32_t rem[TERN_TB_GROUP_MAX + 1][TERN_TB_GROUP_MAX]; /* suffixes ending with r more */
} tb_lens;

typedef struct tb_stats {
  uint32_t n, nrestarts;
  uint32_t len0;   /* length of the first term */
  int fixed;       /* every term has length len0 */
  uint32_t cp;     /* common prefix of the block's terms */
  uint64_t sym[4]; /* suffix bytes (restart suffixes start at cp) */
  /* Of sym, worked out when it changes (rarely once a block has a few
   * entries): its symbols and runs, the largest group size and the bits
   * of a code of r digits (set_alphabet). */
  uint32_t nsym, nranges, gmax;
  uint8_t code_bits[TERN_TB_GROUP_MAX + 1];
  uint64_t rlen_sum; /* lengths of the restart terms */
  uint32_t plen_max, slen_max;
  tb_lens el; /* non-restart entries' suffixes */
  uint32_t df_min, df_max;
  uint32_t npulsed;
  int64_t doc_min, doc_max; /* doc - index of pulsed entries */
  uint64_t ngaps;
  uint32_t gap_max; /* gap - 1 */
  uint32_t nfile;
  uint64_t off_min, off_max, len_min, len_max;
  uint32_t vlen_min, vlen_max;
  uint64_t inline_bytes;
  uint32_t next;
  uint64_t voff_min, voff_max;
} tb_stats;

typedef struct tb_ent {
  uint32_t len, plen, slen, sfx; /* plen/slen/sfx: non-restart entries, suffix in `chars` */
  uint32_t term;                 /* restart entries: offset of the whole term in `chars` */
  uint32_t df, docs;             /* docs: offset in `docs` of pulsed ids */
  uint64_t off, plen_bytes;
  uint32_t vlen, val; /* val: offset in `vals` of an inline value */
  uint64_t voff;
} tb_ent;

struct tern_tb_builder {
  tern_tb_field f;
  uint32_t restart;
  tb_stats *st; /* one of st_mem: adding an entry fills the other, then swaps */
  tb_stats st_mem[2];
  tb_ent *ents;
  uint8_t *chars;
  size_t nchars, chars_cap;
  uint32_t *docs;
  size_t ndocs, docs_cap;
  uint8_t *vals;
  size_t nvals, vals_cap;
  uint8_t first[TERN_TB_TERM_MAX], prev[TERN_TB_TERM_MAX];
  uint32_t prev_len;
  uint32_t group; /* tern_tb_builder_set_group: 0, or the group size every block takes */
  uint8_t buf[TERN_TB_PAGE + 16]; /* bit writer target */
};

int tern_tb_builder_new(tern_tb_builder **out, uint32_t restart_interval) {
  *out = NULL;
  if (restart_interval < 1 || restart_interval > 255)
    return tern_fail(TERN_EINVAL, "terms block: restart interval %u not in 1..255",
                     restart_interval);
  tern_tb_builder *b = calloc(1, sizeof *b);
  if (b) b->ents = malloc(TERN_TB_MAX_ENTRIES * sizeof *b->ents);
  if (!b || !b->ents) {
    free(b);
    return tern_fail(TERN_ENOMEM, "terms block builder: out of memory");
  }
  b->restart = restart_interval;
  b->st = &b->st_mem[0];
  *out = b;
  return TERN_OK;
}

void tern_tb_builder_free(tern_tb_builder *b) {
  if (!b) return;
  free(b->ents);
  free(b->chars);
  free(b->docs);
  free(b->vals);
  free(b);
}

static void builder_empty(tern_tb_builder *b) {
  memset(b->st, 0, sizeof *b->st);
  b->nchars = b->ndocs = b->nvals = 0;
  b->prev_len = 0;
}

void tern_tb_builder_start(tern_tb_builder *b, const tern_tb_field *f) {
  b->f = *f;
  builder_empty(b);
}

uint32_t tern_tb_count(const tern_tb_builder *b) { return b->st->n; }

void tern_tb_builder_set_group(tern_tb_builder *b, uint32_t g) {
  b->group = g <= TERN_TB_GROUP_MAX ? g : 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return TERN_OK;
  size_t c = *cap ? *cap : 4096;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * elem);
  if (!q) return tern_fail(TERN_ENOMEM, "terms block builder: out of memory");
  *p = q;
  *cap = c;
  return TERN_OK;
}

static uint32_t common_prefix(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen) {
  uint32_t n = alen < blen ? alen : blen, i = 0;
  while (i < n && a[i] == b[i]) i++;
  return i;
}

/* Written out per group size: divisions by constants are multiplications
 * (this runs for every entry added to a block). */
#define TB_LENS_ADD(l, slen, g)                                                                    \
  do {                                                                                             \
    (l)->groups[g] += (slen) / (g);                                                                \
    (l)->rem[g][(slen) % (g)]++;                                                                   \
  } while (0)
static void lens_add(tb_lens *l, uint32_t slen) {
  _Static_assert(TERN_TB_GROUP_MAX == 6, "lens_add covers group sizes 1 to 6");
  TB_LENS_ADD(l, slen, 1);
  TB_LENS_ADD(l, slen, 2);
  TB_LENS_ADD(l, slen, 3);
  TB_LENS_ADD(l, slen, 4);
  TB_LENS_ADD(l, slen, 5);
  TB_LENS_ADD(l, slen, 6);
}
#undef TB_LENS_ADD

/* Bits of a code of r digits of an alphabet of k symbols. */
static unsigned code_bits(uint32_t k, uint32_t r) {
  uint64_t p = 1;
  for (uint32_t i = 0; i < r; i++) p *= k;
  return tern_bitwidth(p - 1);
}

/* The largest group size whose codes decode exactly with 32-bit codes and
 * a 64-bit reciprocal: k^(g+1) <= 2^32. */
static uint32_t group_max(uint32_t k) {
  uint32_t g = 1;
  uint64_t p = (uint64_t)k * k;
  while (g < TERN_TB_GROUP_MAX && p * k <= (1ull << 32)) {
    g++;
    p *= k;
  }
  return g;
}

static uint32_t nsymbols(const uint64_t sym[4]) {
  return (uint32_t)(__builtin_popcountll(sym[0]) + __builtin_popcountll(sym[1]) +
                    __builtin_popcountll(sym[2]) + __builtin_popcountll(sym[3]));
}

/* Maximal runs of consecutive bytes in the alphabet. */
static uint32_t nranges(const uint64_t sym[4]) {
  uint32_t n = 0;
  uint64_t carry = 0;
  for (int i = 0; i < 4; i++) {
    n += (uint32_t)__builtin_popcountll(sym[i] & ~(sym[i] << 1 | carry));
    carry = sym[i] >> 63;
  }
  return n;
}

typedef struct tb_widths {
  unsigned plen, slen, df, doc, gap, off, len, vlen, voff;
  uint32_t nsym, group, nranges;
  unsigned gbits[TERN_TB_GROUP_MAX + 1];
  uint64_t suffix_bits; /* of every suffix of the block */
} tb_widths;

/* Picks the group size that codes the block's suffixes in the fewest bits. */
/* The alphabet's counts and code widths, after sym changed. */
static void set_alphabet(tb_stats *s) {
  s->nsym = nsymbols(s->sym);
  s->nranges = nranges(s->sym);
  uint32_t k = s->nsym ? s->nsym : 1;
  s->gmax = group_max(k);
  memset(s->code_bits, 0, sizeof s->code_bits);
  for (uint32_t r = 0; r <= s->gmax; r++) s->code_bits[r] = (uint8_t)code_bits(k, r);
}

/* only: the one group size to consider (tern_tb_builder_set_group), when
 * the alphabet allows it; 0: all. */
static void choose_group(const tb_stats *s, tb_widths *w, uint32_t only) {
  w->suffix_bits = UINT64_MAX;
  /* No symbol yet (stats all zero): one symbol's codes take no bits. */
  uint32_t gmax = s->nsym ? s->gmax : group_max(1);
  unsigned bits[TERN_TB_GROUP_MAX + 1];
  for (uint32_t r = 0; r <= TERN_TB_GROUP_MAX; r++) bits[r] = s->code_bits[r];
  if (only > gmax) only = 0;
  for (uint32_t g = only ? only : 1; g <= (only ? only : gmax); g++) {
    uint64_t total = s->el.groups[g] * bits[g];
    for (uint32_t r = 1; r < g; r++) total += (uint64_t)s->el.rem[g][r] * bits[r];
    if (total < w->suffix_bits) {
      w->suffix_bits = total;
      w->group = g;
      memset(w->gbits, 0, sizeof w->gbits);
      memcpy(w->gbits, bits, (g + 1) * sizeof bits[0]);
    }
  }
}

static void widths_of(const tern_tb_builder *b, const tb_stats *s, tb_widths *w) {
  memset(w, 0, sizeof *w);
  w->plen = s->n > s->nrestarts ? tern_bitwidth(s->plen_max - s->cp) : 0;
  w->slen = s->fixed || s->n == s->nrestarts ? 0 : tern_bitwidth(s->slen_max);
  w->df = tern_bitwidth(s->df_max - s->df_min);
  if (s->npulsed) w->doc = tern_bitwidth((uint64_t)(s->doc_max - s->doc_min));
  w->gap = tern_bitwidth(s->gap_max);
  if (s->nfile) {
    w->off = tern_bitwidth(s->off_max - s->off_min);
    w->len = tern_bitwidth(s->len_max - s->len_min);
  }
  if (b->f.has_values) {
    w->vlen = tern_bitwidth(s->vlen_max - s->vlen_min);
    if (s->next) w->voff = tern_bitwidth(s->voff_max - s->voff_min);
  }
  w->nsym = s->nsym;
  w->nranges = s->nranges;
  choose_group(s, w, b->group);
}

/* Ranges when they are shorter than the 32-byte bitmap. */
static int alphabet_as_ranges(const tb_widths *w) { return 1 + 2 * w->nranges < 32; }

/* Every tail has one width: df, value length (so inline or not) and doc
 * count constant — the reader then finds entry i's tail by its index. */
static int uniform_tails(const tb_stats *s) {
  return s->df_min == s->df_max && s->vlen_min == s->vlen_max;
}

static size_t header_bytes(const tb_stats *s, const tb_widths *w) {
  size_t n = TERN_TB_HEADER_FIXED + (alphabet_as_ranges(w) ? 1 + 2 * w->nranges : 32);
  if (s->fixed) n += tern_varint_len(s->len0);
  n += tern_varint_len(s->cp);
  n += tern_varint_len(s->df_min);
  n += tern_varint_len(s->npulsed ? tern_zigzag(s->doc_min) : 0);
  n += tern_varint_len(s->nfile ? s->off_min : 0) + tern_varint_len(s->nfile ? s->len_min : 0);
  n += tern_varint_len(s->vlen_min) + tern_varint_len(s->next ? s->voff_min : 0);
  n += s->cp;                                     /* the common prefix */
  n += 2 * ((size_t)s->nrestarts + 1);            /* restart key offsets */
  n += 2 * ((size_t)s->nrestarts - 1);            /* restart key positions */
  if (!uniform_tails(s)) n += 2 * ((size_t)s->nrestarts - 1); /* restart tail positions */
  n += s->rlen_sum - (uint64_t)s->nrestarts * s->cp; /* restart keys after the prefix */
  return n;
}

/* Bits of the whole block, header included, for statistics s. */
static uint64_t block_bits(const tern_tb_builder *b, const tb_stats *s, const tb_widths *w) {
  uint64_t nr = s->nrestarts, n = s->n;
  uint64_t bits = 8 * (uint64_t)header_bytes(s, w);
  bits += (n - nr) * (w->plen + w->slen);
  bits += w->suffix_bits;
  bits = (bits + 7) & ~(uint64_t)7; /* the tail stream starts on a byte */
  bits += n * w->df + s->npulsed * (uint64_t)w->doc + s->ngaps * w->gap;
  bits += s->nfile * (uint64_t)(w->off + w->len);
  if (b->f.has_values) bits += n * w->vlen + s->inline_bytes * 8 + s->next * (uint64_t)w->voff;
  return bits;
}

static int entry_pulsed(const tern_tb_builder *b, uint32_t df) { return df <= b->f.threshold; }
static int value_inline(const tern_tb_builder *b, uint32_t vlen) {
  return vlen <= b->f.inline_max;
}

/* The four words in registers: or-ing each byte's bit into memory made
 * every byte wait for the store before it. */
static void add_bytes(tb_stats *st, const uint8_t *p, uint32_t n) {
  uint64_t *sym = st->sym;
  uint64_t s0 = sym[0], s1 = sym[1], s2 = sym[2], s3 = sym[3];
  for (uint32_t i = 0; i < n; i++) {
    uint64_t bit = (uint64_t)1 << (p[i] & 63);
    unsigned q = p[i] >> 6;
    s0 |= q == 0 ? bit : 0;
    s1 |= q == 1 ? bit : 0;
    s2 |= q == 2 ? bit : 0;
    s3 |= q == 3 ? bit : 0;
  }
  if (s0 == sym[0] && s1 == sym[1] && s2 == sym[2] && s3 == sym[3]) return;
  sym[0] = s0, sym[1] = s1, sym[2] = s2, sym[3] = s3;
  set_alphabet(st);
}

/* The statistics with entry `in` added (p: prefix shared with the previous
 * term, for a non-restart entry). */
static void stats_add(const tern_tb_builder *b, tb_stats *s, const tern_tb_input *in, uint32_t p) {
  uint32_t idx = s->n;
  if (idx == 0) {
    s->len0 = in->len;
    s->fixed = 1;
    s->cp = in->len;
    s->df_min = s->df_max = in->df;
    s->vlen_min = s->vlen_max = in->vlen;
  }
  if (in->len != s->len0) s->fixed = 0;
  uint32_t cp = common_prefix(idx ? b->first : in->term, s->cp, in->term, in->len);
  s->cp = cp;
  if (idx % b->restart == 0) {
    s->nrestarts++;
    s->rlen_sum += in->len;
  } else {
    uint32_t slen = in->len - p;
    if (p > s->plen_max) s->plen_max = p;
    if (slen > s->slen_max) s->slen_max = slen;
    lens_add(&s->el, slen);
    add_bytes(s, in->term + p, slen);
  }
  if (in->df < s->df_min) s->df_min = in->df;
  if (in->df > s->df_max) s->df_max = in->df;
  if (entry_pulsed(b, in->df)) {
    int64_t d = (int64_t)in->docs[0] - idx;
    if (s->npulsed == 0 || d < s->doc_min) s->doc_min = d;
    if (s->npulsed == 0 || d > s->doc_max) s->doc_max = d;
    s->npulsed++;
    for (uint32_t k = 1; k < in->df; k++) {
      uint32_t g = in->docs[k] - in->docs[k - 1] - 1;
      if (g > s->gap_max) s->gap_max = g;
    }
    s->ngaps += in->df - 1;
  } else {
    if (s->nfile == 0 || in->post_off < s->off_min) s->off_min = in->post_off;
    if (s->nfile == 0 || in->post_off > s->off_max) s->off_max = in->post_off;
    if (s->nfile == 0 || in->post_len < s->len_min) s->len_min = in->post_len;
    if (s->nfile == 0 || in->post_len > s->len_max) s->len_max = in->post_len;
    s->nfile++;
  }
  if (b->f.has_values) {
    if (in->vlen < s->vlen_min) s->vlen_min = in->vlen;
    if (in->vlen > s->vlen_max) s->vlen_max = in->vlen;
    if (value_inline(b, in->vlen)) {
      s->inline_bytes += in->vlen;
    } else {
      if (s->next == 0 || in->voff < s->voff_min) s->voff_min = in->voff;
      if (s->next == 0 || in->voff > s->voff_max) s->voff_max = in->voff;
      s->next++;
    }
  }
  s->n++;
}

static int check_input(const tern_tb_builder *b, const tern_tb_input *in) {
  if (in->len < 1 || in->len > TERN_TB_TERM_MAX)
    return tern_fail(TERN_EINVAL, "terms block: term of %u bytes", in->len);
  if (in->df < 1) return tern_fail(TERN_EINVAL, "terms block: df 0");
  if (entry_pulsed(b, in->df) && in->df > TERN_TB_DOCS_MAX)
    return tern_fail(TERN_EINVAL, "terms block: %u pulsed docs", in->df);
  if (b->f.has_values && value_inline(b, in->vlen) && in->vlen > TERN_TB_TERM_MAX)
    return tern_fail(TERN_EINVAL, "terms block: inline value of %u bytes", in->vlen);
  /* Offsets beyond 2^48 bytes would widen a column past what one read returns. */
  if ((in->post_off | in->post_len | in->voff) >> 48)
    return tern_fail(TERN_EINVAL, "terms block: file offset beyond 2^48");
  return TERN_OK;
}

static int keep_entry(tern_tb_builder *b, const tern_tb_input *in, uint32_t p) {
  uint32_t idx = b->st->n;
  int restart = idx % b->restart == 0;
  uint32_t keep = restart ? in->len : in->len - p;
  TERN_TRY(grow((void **)&b->chars, &b->chars_cap, b->nchars + keep, 1));
  int pulsed = entry_pulsed(b, in->df);
  if (pulsed) TERN_TRY(grow((void **)&b->docs, &b->docs_cap, b->ndocs + in->df, sizeof(uint32_t)));
  int vin = b->f.has_values && value_inline(b, in->vlen);
  if (vin && in->vlen) TERN_TRY(grow((void **)&b->vals, &b->vals_cap, b->nvals + in->vlen, 1));
  tb_ent *e = &b->ents[idx];
  memset(e, 0, sizeof *e);
  e->len = in->len;
  if (restart) {
    e->term = (uint32_t)b->nchars;
    memcpy(b->chars + b->nchars, in->term, in->len);
  } else {
    e->plen = p;
    e->slen = in->len - p;
    e->sfx = (uint32_t)b->nchars;
    memcpy(b->chars + b->nchars, in->term + p, e->slen);
  }
  b->nchars += keep;
  e->df = in->df;
  if (pulsed) {
    e->docs = (uint32_t)b->ndocs;
    memcpy(b->docs + b->ndocs, in->docs, in->df * sizeof(uint32_t));
    b->ndocs += in->df;
  } else {
    e->off = in->post_off;
    e->plen_bytes = in->post_len;
  }
  if (b->f.has_values) {
    e->vlen = in->vlen;
    if (vin) {
      e->val = (uint32_t)b->nvals;
      if (in->vlen) memcpy(b->vals + b->nvals, in->val, in->vlen);
      b->nvals += in->vlen;
    } else {
      e->voff = in->voff;
    }
  }
  if (idx == 0) memcpy(b->first, in->term, in->len);
  memcpy(b->prev, in->term, in->len);
  b->prev_len = in->len;
  return TERN_OK;
}

int tern_tb_add(tern_tb_builder *b, const tern_tb_input *in) {
  TERN_TRY(check_input(b, in));
  if (b->st->n >= TERN_TB_MAX_ENTRIES) return 1;
  uint32_t idx = b->st->n, p = 0;
  if (idx) {
    p = common_prefix(b->prev, b->prev_len, in->term, in->len);
    if (p == in->len) return tern_fail(TERN_EINVAL, "terms block: terms not strictly ascending");
  }
  tb_stats *s = b->st == &b->st_mem[0] ? &b->st_mem[1] : &b->st_mem[0];
  *s = *b->st;
  stats_add(b, s, in, p);
  tb_widths w;
  widths_of(b, s, &w);
  if (block_bits(b, s, &w) > 8u * TERN_TB_PAGE) {
    if (idx == 0) return tern_fail(TERN_EINVAL, "terms block: entry too large for a block");
    return 1;
  }
  TERN_TRY(keep_entry(b, in, p));
  b->st = s;
  return TERN_OK;
}

/* ---------------------------------------------------------------- encoding */

static uint64_t tail_bits(const tern_tb_builder *b, const tb_ent *e, const tb_widths *w) {
  uint64_t bits = w->df;
  if (entry_pulsed(b, e->df))
    bits += w->doc + (uint64_t)(e->df - 1) * w->gap;
  else
    bits += w->off + w->len;
  if (b->f.has_values) bits += w->vlen + (value_inline(b, e->vlen) ? e->vlen * 8ull : w->voff);
  return bits;
}

static uint64_t suffix_bits(uint32_t slen, const tb_widths *w) {
  return (uint64_t)(slen / w->group) * w->gbits[w->group] + w->gbits[slen % w->group];
}

/* Each run of g digits as one base-K number, the first digit most
 * significant (so codes compare as the characters do). */
static void put_suffix(tern_bitw *bw, const uint8_t *digit, const uint8_t *s, uint32_t n,
                       const tb_widths *w) {
  for (uint32_t i = 0; i < n; i += w->group) {
    uint32_t r = n - i < w->group ? n - i : w->group;
    uint64_t code = 0;
    for (uint32_t j = 0; j < r; j++) code = code * w->nsym + digit[s[i + j]];
    tern_bits_put(bw, code, w->gbits[r]);
  }
}

/* Bytes as 8-bit fields, seven to a write (the stream is LSB first, so
 * seven bytes are one 56-bit field, the first byte lowest). */
static void put_bytes(tern_bitw *bw, const uint8_t *p, uint32_t n) {
  for (; n >= 7; p += 7, n -= 7) {
    uint64_t v = 0;
    for (int i = 6; i >= 0; i--) v = v << 8 | p[i];
    tern_bits_put(bw, v, 56);
  }
  for (; n; p++, n--) tern_bits_put(bw, *p, 8);
}

static void put_tail(const tern_tb_builder *b, tern_bitw *bw, const tb_ent *e, uint32_t idx,
                     const tb_widths *w) {
  const tb_stats *s = b->st;
  tern_bits_put(bw, e->df - s->df_min, w->df);
  if (entry_pulsed(b, e->df)) {
    const uint32_t *d = b->docs + e->docs;
    tern_bits_put(bw, (uint64_t)((int64_t)d[0] - idx - s->doc_min), w->doc);
    for (uint32_t k = 1; k < e->df; k++) tern_bits_put(bw, d[k] - d[k - 1] - 1, w->gap);
  } else {
    tern_bits_put(bw, e->off - s->off_min, w->off);
    tern_bits_put(bw, e->plen_bytes - s->len_min, w->len);
  }
  if (!b->f.has_values) return;
  tern_bits_put(bw, e->vlen - s->vlen_min, w->vlen);
  if (value_inline(b, e->vlen)) {
    if (e->vlen) put_bytes(bw, b->vals + e->val, e->vlen); /* vals NULL when none */
  } else {
    tern_bits_put(bw, e->voff - s->voff_min, w->voff);
  }
}

static size_t put_alphabet(const tb_stats *s, const tb_widths *w, uint8_t *page, size_t n) {
  if (!alphabet_as_ranges(w)) {
    for (int i = 0; i < 4; i++) tern_store64(page + n + 8 * i, s->sym[i]);
    return n + 32;
  }
  page[0] |= TERN_TB_RANGES;
  page[n++] = (uint8_t)w->nranges;
  for (uint32_t c = 0; c < 256; c++) {
    int in = s->sym[c >> 6] >> (c & 63) & 1;
    int before = c > 0 && (s->sym[(c - 1) >> 6] >> ((c - 1) & 63) & 1);
    int after = c < 255 && (s->sym[(c + 1) >> 6] >> ((c + 1) & 63) & 1);
    if (in && !before) page[n++] = (uint8_t)c;
    if (in && !after) page[n++] = (uint8_t)c;
  }
  return n;
}

/* The restart positions in both streams, which the header lists. */
typedef struct tb_layout {
  uint32_t *kpos, *tpos; /* nrestarts each */
  uint32_t tails_start;
} tb_layout;

static size_t put_header(const tern_tb_builder *b, uint8_t *page, const tb_widths *w,
                         uint32_t keys_start, uint32_t used_bits, const tb_layout *l) {
  const tb_stats *s = b->st;
  page[0] = (uint8_t)((s->fixed ? TERN_TB_FIXED_LEN : 0) | (uniform_tails(s) ? TERN_TB_UNIFORM : 0));
  page[1] = (uint8_t)b->restart;
  tern_store16(page + 2, (uint16_t)s->n);
  tern_store16(page + 4, (uint16_t)keys_start);
  tern_store16(page + 6, (uint16_t)l->tails_start);
  tern_store16(page + 8, (uint16_t)used_bits);
  const unsigned ws[9] = {w->plen, w->slen, w->df, w->doc, w->gap, w->off, w->len, w->vlen, w->voff};
  for (int i = 0; i < 9; i++) page[10 + i] = (uint8_t)ws[i];
  page[19] = (uint8_t)w->group;
  size_t n = put_alphabet(s, w, page, TERN_TB_HEADER_FIXED);
  if (s->fixed) n += tern_put_varint(page + n, s->len0);
  n += tern_put_varint(page + n, s->cp);
  n += tern_put_varint(page + n, s->df_min);
  n += tern_put_varint(page + n, s->npulsed ? tern_zigzag(s->doc_min) : 0);
  n += tern_put_varint(page + n, s->nfile ? s->off_min : 0);
  n += tern_put_varint(page + n, s->nfile ? s->len_min : 0);
  n += tern_put_varint(page + n, s->vlen_min);
  n += tern_put_varint(page + n, s->next ? s->voff_min : 0);
  memcpy(page + n, b->first, s->cp);
  n += s->cp;
  size_t lists = uniform_tails(s) ? 1 : 2;
  size_t offs = n, keys = n + 2 * ((size_t)s->nrestarts + 1) + 2 * lists * ((size_t)s->nrestarts - 1);
  n = keys;
  for (uint32_t r = 0; r < s->nrestarts; r++) {
    const tb_ent *e = &b->ents[r * b->restart];
    tern_store16(page + offs + 2 * r, (uint16_t)n);
    memcpy(page + n, b->chars + e->term + s->cp, e->len - s->cp);
    n += e->len - s->cp;
  }
  tern_store16(page + offs + 2 * s->nrestarts, (uint16_t)n);
  offs += 2 * ((size_t)s->nrestarts + 1);
  for (uint32_t r = 1; r < s->nrestarts; r++, offs += 2) tern_store16(page + offs, (uint16_t)l->kpos[r]);
  if (lists == 2)
    for (uint32_t r = 1; r < s->nrestarts; r++, offs += 2) tern_store16(page + offs, (uint16_t)l->tpos[r]);
  return n;
}

/* Where every run starts in the key and tail streams. */
static void lay_out(const tern_tb_builder *b, const tb_widths *w, uint32_t keys_start, tb_layout *l) {
  const tb_stats *s = b->st;
  uint64_t kp = keys_start;
  for (uint32_t i = 0; i < s->n; i++) {
    const tb_ent *e = &b->ents[i];
    if (i % b->restart == 0) l->kpos[i / b->restart] = (uint32_t)kp;
    else kp += w->plen + w->slen + suffix_bits(e->slen, w);
  }
  uint64_t tp = (kp + 7) & ~(uint64_t)7;
  l->tails_start = (uint32_t)tp;
  for (uint32_t i = 0; i < s->n; i++) {
    if (i % b->restart == 0) l->tpos[i / b->restart] = (uint32_t)tp;
    tp += tail_bits(b, &b->ents[i], w);
  }
}

int tern_tb_finish(tern_tb_builder *b, uint8_t *page) {
  const tb_stats *s = b->st;
  if (s->n == 0) return tern_fail(TERN_EINVAL, "terms block: no entries");
  tb_widths w;
  widths_of(b, s, &w);
  uint8_t digit[256] = {0};
  for (uint32_t c = 0, d = 0; c < 256; c++)
    if (s->sym[c >> 6] >> (c & 63) & 1) digit[c] = (uint8_t)d++;
  uint64_t total = block_bits(b, s, &w);
  uint32_t hbytes = (uint32_t)header_bytes(s, &w);
  if (total > 8u * TERN_TB_PAGE) return tern_fail(TERN_EINVAL, "terms block: over the page");
  tb_layout l;
  l.kpos = malloc(2 * s->nrestarts * sizeof *l.kpos);
  if (!l.kpos) return tern_fail(TERN_ENOMEM, "terms block builder: out of memory");
  l.tpos = l.kpos + s->nrestarts;
  lay_out(b, &w, 8 * hbytes, &l);
  memset(b->buf, 0, sizeof b->buf);
  size_t at = put_header(b, b->buf, &w, 8 * hbytes, (uint32_t)total, &l);
  uint32_t tails_start = l.tails_start;
  free(l.kpos);
  if (at != hbytes) return tern_fail(TERN_EINVAL, "terms block: header size drifted");
  tern_bitw bw = {b->buf, 8 * hbytes};
  for (uint32_t i = 0; i < s->n; i++) {
    const tb_ent *e = &b->ents[i];
    if (i % b->restart == 0) continue;
    tern_bits_put(&bw, e->plen - s->cp, w.plen);
    tern_bits_put(&bw, e->slen, w.slen);
    put_suffix(&bw, digit, b->chars + e->sfx, e->slen, &w);
  }
  if ((bw.pos + 7) / 8 * 8 != tails_start)
    return tern_fail(TERN_EINVAL, "terms block: key stream drifted");
  bw.pos = tails_start;
  for (uint32_t i = 0; i < s->n; i++) put_tail(b, &bw, &b->ents[i], i, &w);
  if (bw.pos != total) return tern_fail(TERN_EINVAL, "terms block: encoder drifted");
  memcpy(page, b->buf, TERN_TB_PAGE);
  builder_empty(b);
  return TERN_OK;
}
