/* SPDX-License-Identifier: MIT */
/*
 * terms_block.h — one terms block: up to 4096 consecutive terms of a field
 * with their postings metadata (and values, for the unique field), coded
 * into the first 4092 bytes of one 4096-byte page, whose last 4 hold the
 * page's checksum (docs/FORMAT.md, format version 4).
 *
 * The block is a byte-aligned header, then two bit streams: the keys of
 * the entries that are not restarts, then every entry's tail (df, doc ids
 * or postings range, value).  Every R-th entry (a "restart") has its term
 * stored whole, as plain bytes after the block prefix, in the header, with
 * the positions where its run continues in both streams.  A lookup
 * compares the key with the block prefix, binary-searches the restart keys
 * 8 bytes at a time, and scans the keys of one run (at most R-1 entries) without
 * touching a tail; only the entry found has its tail decoded, directly at
 * its index when every tail of the block has one width.  So the work of a
 * lookup depends on R, not on the key's shape.
 *
 * Every numeric column is frame-of-reference coded: a per-block minimum in
 * the header and a per-block width, the fewest bits holding (value - min)
 * for every entry of the block.  Suffix bytes of non-restart entries are
 * coded with the block's alphabet: its K distinct bytes become digits
 * 0..K-1, and each run of g digits (g chosen per block, 1 to 6) is one
 * base-K number in ceil(log2 K^g) bits — for 36 symbols, 5 characters in
 * 26 bits, 5.2 bits a character against log2 36 = 5.17.  So a block of
 * primary keys with doc ids equal to their ordinals stores, per key,
 * little more than the information in its suffix.
 *
 * The builder keeps the running extremes of every column so that deciding
 * whether one more term fits costs O(1); the decoder never reads outside
 * the block's TERN_TB_PAGE bytes (bitstream.h) and reports any inconsistency
 * as TERN_ECORRUPT.
 */
#ifndef TERN_TERMS_BLOCK_H
#define TERN_TERMS_BLOCK_H

#include "codec/bitstream.h"

#include <stddef.h>
#include <stdint.h>

#define TERN_TB_PAGE TERN_BITS_PAGE /* bytes of a block: its page less the page checksum */
#define TERN_TB_MAX_ENTRIES 4096u   /* entries of a block, at most */
#define TERN_TB_RESTART 8u          /* default restart interval */
#define TERN_TB_TERM_MAX 1024u      /* longest term (TERN_KEY_MAX) */
#define TERN_TB_DOCS_MAX 64u        /* most doc ids in an entry (TERN_PULSE_MAX) */
#define TERN_TB_HEADER_FIXED 20u    /* header bytes before the alphabet */
#define TERN_TB_GROUP_MAX 6u        /* most characters coded as one number */
#define TERN_TB_SBITS 64u           /* suffix lengths whose bits are tabulated */
#define TERN_TB_FIXED_LEN 0x1u      /* header flag: all terms of the block have one length */
#define TERN_TB_RANGES 0x2u         /* header flag: the alphabet is a list of byte ranges */
#define TERN_TB_UNIFORM 0x4u        /* header flag: every tail has one width (no tail positions) */

/* What a field's blocks depend on besides their own bytes. */
typedef struct tern_tb_field {
  uint32_t threshold;  /* df <= threshold: doc ids in the entry */
  uint32_t inline_max; /* values up to this many bytes in the entry */
  uint32_t has_values; /* the unique field: every entry has a value */
  uint32_t max_doc;    /* decoder: doc ids are below this */
} tern_tb_field;

/* An entry as the builder takes it. */
typedef struct tern_tb_input {
  const uint8_t *term;
  uint32_t len;
  uint32_t df;
  const uint32_t *docs;      /* df <= threshold: the doc ids */
  uint64_t post_off, post_len; /* otherwise: their range in the postings file */
  uint32_t vlen;             /* has_values: the value's length */
  const uint8_t *val;        /* vlen <= inline_max: its bytes */
  uint64_t voff;             /* otherwise: its offset in the values file */
} tern_tb_input;

/* An entry's metadata as the decoder returns it. */
typedef struct tern_tb_tail {
  uint32_t df;
  int pulsed;
  uint32_t *docs; /* set by the caller: room for TERN_TB_DOCS_MAX ids */
  uint64_t post_off, post_len;
  uint32_t vlen;
  int vinline;
  uint32_t vbit;  /* inline value: bit position of its bytes */
  uint64_t voff;
} tern_tb_tail;

/* ---------------------------------------------------------------- builder */

typedef struct tern_tb_builder tern_tb_builder;

int tern_tb_builder_new(tern_tb_builder **out, uint32_t restart_interval);
void tern_tb_builder_free(tern_tb_builder *b);
/* For tests: every block codes its suffixes g characters a code when its
 * alphabet allows g (K^(g+1) <= 2^32), else as the builder would choose;
 * 0 (the default): the g that makes the block shortest.  Any g is valid
 * format (the reader decodes whatever the block says). */
void tern_tb_builder_set_group(tern_tb_builder *b, uint32_t g);
/* Empties the builder; the next entries belong to a field so described. */
void tern_tb_builder_start(tern_tb_builder *b, const tern_tb_field *f);
/* Adds an entry (terms ascending) when the block can hold it: 0 added,
 * 1 full (nothing added: finish the block first), <0 error. */
int tern_tb_add(tern_tb_builder *b, const tern_tb_input *in);
uint32_t tern_tb_count(const tern_tb_builder *b);
/* Encodes the entries into page[TERN_TB_PAGE], zero-padded, and empties
 * the builder (the page's checksum, after them, is the file layer's). */
int tern_tb_finish(tern_tb_builder *b, uint8_t *page);

/* ---------------------------------------------------------------- decoder */

/* A block's header, decoded once per block read. */
typedef struct tern_tb_block {
  const uint8_t *page;
  const char *what;  /* file, for messages */
  uint64_t block_no; /* for messages */
  tern_tb_field f;
  uint32_t n, restart, nrestarts;
  uint32_t keys_start, tails_start, used_bits; /* bit positions of the two streams */
  uint32_t cp;                       /* prefix length */
  const uint8_t *prefix;             /* in the page */
  const uint8_t *rkey;               /* nrestarts + 1 u16: byte offsets of the restart keys */
  const uint8_t *rkpos, *rtpos;      /* u16 key / tail stream positions of restarts 1..
                                      * (rtpos: NULL when the tails are uniform) */
  uint32_t fixed_len;                /* 0: lengths are coded */
  uint8_t bw_plen, bw_slen, bw_df, bw_doc, bw_gap, bw_off, bw_len, bw_vlen, bw_voff;
  uint8_t group;                       /* g: characters per code */
  const uint8_t *gbits;                /* bits of a code of r characters, r <= g */
  const uint16_t *sbits;               /* bits of a suffix of n < TERN_TB_SBITS characters */
  uint32_t nsym;                       /* K */
  uint32_t gdiv;                       /* ceil(2^16 / g): n / g = n * gdiv >> 16 */
  const uint64_t *pow, *rpow;          /* K^j and floor(2^64 / K^j) + 1, j <= g */
  uint32_t df_min, vlen_min;
  int64_t doc_base;
  uint64_t off_min, len_min, voff_min;
  int32_t tail_bits; /* bits of every entry's tail when they are all equal, else -1 */
  const uint8_t *alpha; /* the alphabet as stored: ranges (after their count) or bitmap */
  uint32_t nranges;     /* RANGES: their count; bitmap: 0 */
  uint32_t below[4];    /* bitmap: alphabet bytes below 64 * word */
  int tables;           /* sym is filled (tern_tb_tables) */
  const uint8_t *pair;  /* two digits -> their two bytes (tern_tb_use_pairs), or NULL */
  uint8_t sym[256 + 8]; /* digit -> byte (8 bytes of slack for filling) */
} tern_tb_block;

/* Decodes and checks page's header.  expect_n: the entry count the terms
 * index records (0: unknown). */
int tern_tb_open(tern_tb_block *b, const uint8_t *page, const tern_tb_field *f, uint32_t expect_n,
                 const char *what, uint64_t block_no);
/* The same checks, without filling the digit -> byte table, which only
 * decoding needs: a lookup (tern_tb_lower_bound) codes the key's bytes
 * into digits from the alphabet as stored.  Call tern_tb_tables before
 * iterating such a block. */
int tern_tb_open_lookup(tern_tb_block *b, const uint8_t *page, const tern_tb_field *f,
                        uint32_t expect_n, const char *what, uint64_t block_no);
/* Fills the digit -> byte table of a block opened by tern_tb_open_lookup
 * (no-op when it is filled). */
void tern_tb_tables(tern_tb_block *b);

/* A header as tern_tb_open_lookup decoded and checked it, apart from its
 * page: what a reader keeps per block (codec/segment_headers.c) so that a
 * block read again is not decoded again.  Its pointers into the page are
 * kept as offsets; the rest is the decoded header's bytes. */
#define TERN_TB_SAVED_BYTES offsetof(tern_tb_block, tables)
typedef struct tern_tb_saved {
  uint16_t prefix, rkey, rkpos, rtpos, alpha; /* page offsets (rtpos 0: none) */
  unsigned char img[TERN_TB_SAVED_BYTES];      /* the tern_tb_block up to its tables */
} tern_tb_saved;
/* Keeps b's header (opened by tern_tb_open_lookup or tern_tb_open) in *sv. */
void tern_tb_save(const tern_tb_block *b, tern_tb_saved *sv);
/* Opens the block at `page` from its saved header, as tern_tb_open_lookup
 * would — for the same page bytes only: the page must be the one that sv
 * was saved from, or a copy of it, read and checked again (its checksum),
 * and what / block_no name it as before.  No check can fail: they were
 * made when it was saved. */
void tern_tb_open_saved(tern_tb_block *b, const tern_tb_saved *sv, const uint8_t *page,
                        const char *what, uint64_t block_no);

/* A table decoding two characters of a suffix with one lookup, for blocks
 * whose alphabet has at most TERN_TB_PAIR_K bytes and that code several
 * characters as one number: a scan decodes every suffix, and one lookup
 * and half the divisions per two characters is most of a step's decode.
 * Held by the caller (a scanning cursor), which decides when a block whose
 * alphabet differs from the table's is worth a rebuild. */
#define TERN_TB_PAIR_K 64u
typedef struct tern_tb_pairs {
  uint32_t nsym;                 /* 0: not built */
  uint8_t sym[TERN_TB_PAIR_K];   /* the alphabet it was built for */
  uint8_t alpha[32];             /* that alphabet as its block stored it (ranges or bitmap) */
  uint32_t alpha_len;            /* its bytes */
  int ranges;                    /* stored as ranges (TERN_TB_RANGES) */
  uint8_t tab[2 * TERN_TB_PAIR_K * TERN_TB_PAIR_K]; /* [2 (hi * K + lo)] = sym[hi], sym[lo] */
} tern_tb_pairs;
/* Points b (tables filled) at `pairs` when the table holds b's alphabet,
 * or, with `build`, after rebuilding it for b's alphabet; leaves b without
 * a pair table when it would not help.  No effect on what decodes, only
 * on how fast.  A rebuild costs about K^2 stores (K: the alphabet's size),
 * which a caller pays only when it steps through enough of the block. */
void tern_tb_use_pairs(tern_tb_block *b, tern_tb_pairs *pairs, int build);
/* tern_tb_tables and tern_tb_use_pairs(b, pairs, 0) at once, when b
 * stores the very alphabet `pairs` was built for (byte for byte: the same
 * digits), with sym copied from the table instead of filled again:
 * returns 1 then, else 0 with b untouched.  A seek lands in a new block
 * each time, and a block of a primary key mostly has its neighbours'
 * alphabet. */
int tern_tb_tables_from_pairs(tern_tb_block *b, const tern_tb_pairs *pairs);

/* Sequential decoding state.  The caller's term buffer holds the last term
 * decoded (TERN_TB_TERM_MAX bytes). */
typedef struct tern_tb_iter {
  uint32_t entry; /* next entry */
  uint32_t pos;   /* its tail's bit position (used_bits after the last entry) */
  uint32_t kpos;  /* the bit position of the next non-restart key */
  uint32_t len;   /* length of the term in the caller's buffer */
} tern_tb_iter;

/* Positions `it` so that the next entry decoded is entry r * restart. */
int tern_tb_iter_restart(const tern_tb_block *b, tern_tb_iter *it, uint32_t r, uint8_t *term);
/* Decodes the next entry into term[] and *t; TERN_NOTFOUND after the last. */
int tern_tb_iter_next(const tern_tb_block *b, tern_tb_iter *it, uint8_t *term, tern_tb_tail *t);
/* Terms of consecutive entries decoded ahead of their tails, for a scan:
 * the key stream is decoded in one tight loop per batch — the block's
 * constants (group, alphabet, widths) stay in registers, no per-entry
 * call or state write-back — while each entry's tail is still decoded
 * when the entry is stepped to (tern_tb_iter_tail).  Each term is held
 * whole (a step hands out a pointer, no copy).  Bounded: at most
 * TERN_TB_KEYS_MAX entries, and no more once TERN_TB_KEYS_FILL bytes of
 * terms are held (the room holds one longest term past that). */
#define TERN_TB_KEYS_MAX 64u
#define TERN_TB_KEYS_FILL 4096u
#define TERN_TB_KEYS_ROOM (TERN_TB_KEYS_FILL + TERN_TB_TERM_MAX + 32u)
typedef struct tern_tb_keys {
  uint32_t first, n;              /* entries first .. first + n - 1 of the block */
  int tails;                      /* the tails are decoded too (below): a block whose every
                                   * entry has one pulsed doc (a primary key's) */
  uint16_t off[TERN_TB_KEYS_MAX]; /* term j at bytes + off[j] */
  uint16_t len[TERN_TB_KEYS_MAX];
  uint16_t kend[TERN_TB_KEYS_MAX]; /* key stream bit position after term j */
  /* tails: entry j's value of vlens[j] bytes (0 when the field has no
   * values) at bit vbits[j] of the block, or at byte voffs[j] of NAME.val
   * when vbits[j] is 0 (no tail starts at bit 0: the header does); its
   * tail ends at bit tends[j] (a page has 32,768 bits: 16 bits hold them) */
  uint16_t vbits[TERN_TB_KEYS_MAX];
  uint16_t tends[TERN_TB_KEYS_MAX];
  uint32_t vlens[TERN_TB_KEYS_MAX];
  uint64_t voffs[TERN_TB_KEYS_MAX];
  /* tails: entry j's doc id (checked below max_doc): doc0 + j when the
   * block has no doc column (docs by ordinal), else doc[j] */
  int doc_col;
  uint32_t doc0;
  uint32_t doc[TERN_TB_KEYS_MAX];
  uint8_t bytes[TERN_TB_KEYS_ROOM];
  /* A block whose key stream ends less than 8 bytes before the page's
   * end, copied with 8 zero bytes after it: the batch's reads (8 bytes
   * at any bit of the key stream) then need no bound test. */
  uint8_t pad[TERN_TB_PAGE + 8];
} tern_tb_keys;
/* Whether a batch of block b decodes its tails with its terms (k->tails):
 * every entry has one pulsed doc (no df column, df 1) — a primary key's,
 * its value inline or in NAME.val, of one length or of many. */
static inline int tern_tb_batch_tails(const tern_tb_block *b) {
  return b->bw_df == 0 && b->df_min == 1 && b->f.threshold >= 1;
}
/* With k->tails: entry first + j's value bit position (0: in NAME.val,
 * at tern_tb_keys_voff), value length and doc id. */
static inline uint32_t tern_tb_keys_vbit(const tern_tb_keys *k, uint32_t j) { return k->vbits[j]; }
static inline uint32_t tern_tb_keys_vlen(const tern_tb_keys *k, uint32_t j) { return k->vlens[j]; }
static inline uint64_t tern_tb_keys_voff(const tern_tb_keys *k, uint32_t j) { return k->voffs[j]; }
static inline uint32_t tern_tb_keys_doc(const tern_tb_keys *k, uint32_t j) {
  return k->doc_col ? k->doc[j] : k->doc0 + j;
}
/* With k->tails: entry first + j's tail as tern_tb_iter_tail decodes it
 * (t->docs set by the caller) — in block b, which k was decoded from. */
static inline void tern_tb_keys_tail(const tern_tb_block *b, const tern_tb_keys *k, uint32_t j,
                                     tern_tb_tail *t) {
  t->df = 1;
  t->pulsed = 1;
  t->docs[0] = tern_tb_keys_doc(k, j);
  t->post_off = t->post_len = 0;
  t->vinline = b->f.has_values && k->vbits[j] != 0;
  t->vlen = b->f.has_values ? k->vlens[j] : 0;
  t->vbit = t->vinline ? k->vbits[j] : 0;
  t->voff = b->f.has_values && !t->vinline ? k->voffs[j] : 0;
}
/* Decodes the terms of entries it->entry, it->entry + 1, ... — at most
 * `want` (1 to TERN_TB_KEYS_MAX), fewer at the block's end or when their
 * bytes fill k — into k.  The key side of `it` (kpos, len, and term[], the
 * last term decoded) moves past them; its tail side (entry, pos) stays:
 * the entries' tails are taken one by one, in order, by tern_tb_iter_tail.
 * The key side must stand at it->entry (as tern_tb_iter_next leaves it,
 * or after every tail of the previous batch was taken).  With k->tails
 * set, the tails are decoded (and checked) too: the caller then takes
 * entry j's from k and moves it->entry and it->pos itself
 * (tern_tb_iter_skip_tail) instead of calling tern_tb_iter_tail.
 * TERN_NOTFOUND after the last entry; the checks are tern_tb_iter_next's. */
int tern_tb_iter_keys(const tern_tb_block *b, tern_tb_iter *it, uint8_t *term, tern_tb_keys *k,
                      uint32_t want);
/* The tail of entry it->entry into *t (its term decoded by
 * tern_tb_iter_keys), it->entry one further; TERN_NOTFOUND after the last. */
int tern_tb_iter_tail(const tern_tb_block *b, tern_tb_iter *it, tern_tb_tail *t);
/* Moves `it` past the tail of entry it->entry, entry first + j of batch k
 * (k->tails: decoded with the terms). */
static inline void tern_tb_keys_skip_tail(const tern_tb_keys *k, uint32_t j, tern_tb_iter *it) {
  it->entry++;
  it->pos = k->tends[j];
}

/* Positions `it` so that the next entry decoded is entry `index` (term[]
 * then holds the bytes that entry shares with its predecessor, no more). */
int tern_tb_iter_seek(const tern_tb_block *b, tern_tb_iter *it, uint32_t index, uint8_t *term);
/* tern_tb_iter_seek for an iterator that already stands in the block, its
 * term in `term` (the state tern_tb_iter_next left): an entry further on
 * in the same restart run is reached from there (the entries between
 * walked by their lengths, no restart re-read); any other is sought from
 * its restart. */
int tern_tb_iter_seek_from(const tern_tb_block *b, tern_tb_iter *it, uint32_t index,
                           uint8_t *term);

/* The terms and tails of chosen entries of a block, ascending: resolving
 * a term's hits, whose doc ids are ranks of the unique field, to their
 * keys (tern_tb_resolve).  Each term is held whole; a tail as a primary
 * key's is read: its doc and where its value is. */
#define TERN_TB_HITS_MAX 64u
#define TERN_TB_HITS_FILL 4096u
#define TERN_TB_HITS_ROOM (TERN_TB_HITS_FILL + 2u * TERN_TB_TERM_MAX + 32u)
#define TERN_TB_HIT_VINLINE 0x1u /* the value is in the block, at bit vbit */
#define TERN_TB_HIT_POSTINGS 0x2u /* no single pulsed doc: its doc is its postings' first */
typedef struct tern_tb_hit {
  uint32_t doc;   /* the entry's pulsed doc (checked below max_doc), unless POSTINGS */
  uint32_t flags; /* TERN_TB_HIT_* */
  uint32_t vlen, vbit;
  uint64_t voff;             /* not VINLINE: the value's offset in the values file */
  uint64_t post_off, post_len; /* POSTINGS: as tern_tb_tail's */
  uint32_t df;
  uint16_t off, len; /* the term at bytes + off */
} tern_tb_hit;
typedef struct tern_tb_hits {
  uint32_t n;
  uint32_t prev; /* it->entry > 0: the term before it->entry is at bytes + prev (it->len bytes) */
  int direct;    /* every hit's doc is the block's doc base plus its entry (a primary key's) */
  tern_tb_hit hit[TERN_TB_HITS_MAX];
  uint8_t bytes[TERN_TB_HITS_ROOM];
  uint8_t pad[TERN_TB_PAGE + 8]; /* the block when its key stream ends near the page's end, as
                                    tern_tb_keys's */
} tern_tb_hits;
/* Resolves entries ids[0] - base < ids[1] - base < ... into h: at most n,
 * at most TERN_TB_HITS_MAX, none from the first past the block's last
 * entry on, and no more once TERN_TB_HITS_FILL bytes of terms are held.
 * Walks forward from `it`: it->entry 0 (nothing decoded in the block
 * yet), or as the previous call left it (the last term decoded at
 * h->bytes + h->prev, which the call moves to the front first).  The
 * entries between are walked by their lengths alone; only the characters
 * that survive into a resolved term are decoded (each resolved term is
 * whole), and a restart past the position, at or before an entry, is
 * started from rather than walked to.  *done: the entries resolved.
 * TERN_EINVAL: an entry before it->entry (ids not ascending); the checks
 * are tern_tb_iter_seek's and tern_tb_iter_next's (TERN_ECORRUPT). */
int tern_tb_resolve(const tern_tb_block *b, tern_tb_iter *it, tern_tb_hits *h, const uint32_t *ids,
                    uint32_t n, uint64_t base, uint32_t *done);


/* Finds the first entry >= key: *index (n when none).  Returns 1 when it
 * equals key — then *t is its tail and `it` is positioned after it, its
 * term being key — 0 when not, <0 on corruption (TERN_EINVAL for a key of
 * more than TERN_TB_TERM_MAX bytes).  Decodes only the
 * suffix characters it compares, and only the tail of the entry found. */
int tern_tb_lower_bound(const tern_tb_block *b, const uint8_t *key, uint32_t klen, uint32_t *index,
                        tern_tb_iter *it, tern_tb_tail *t);

/* tern_tb_lower_bound in two steps, for a caller that interleaves many
 * lookups (codec/segment_lookup_steps.h): begin searches the prefix and
 * the restart keys and, when a run must be scanned, starts fetching that
 * run's lines and returns TERN_TB_PENDING with *pd saying where to go on;
 * finish scans the run (the same key again).  Together they answer
 * exactly as tern_tb_lower_bound, and search nothing twice. */
#define TERN_TB_PENDING 2
typedef struct tern_tb_pending {
  uint32_t r;    /* the run: restart r is the last restart below the key */
  uint32_t m;    /* bytes restart r shares with the key */
  uint32_t cur;  /* restart r's length */
  uint32_t kpos; /* key stream bit where the run goes on (its lines asked for) */
} tern_tb_pending;
int tern_tb_lookup_begin(const tern_tb_block *b, const uint8_t *key, uint32_t klen,
                         uint32_t *index, tern_tb_iter *it, tern_tb_tail *t, tern_tb_pending *pd);
int tern_tb_lookup_finish(const tern_tb_block *b, const uint8_t *key, uint32_t klen,
                          const tern_tb_pending *pd, uint32_t *index, tern_tb_iter *it,
                          tern_tb_tail *t);

/* The inline value's bytes (t->vlen of them) into out. */
void tern_tb_copy_value(const tern_tb_block *b, const tern_tb_tail *t, uint8_t *out);

#endif
