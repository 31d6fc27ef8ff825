/*
 * terms_index.c — the resident terms index (terms_index.h).
 */
#include "codec/terms_index.h"

#include "codec/coding.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

#define SEP_MAX 1024u /* separators are prefixes of terms */

static int key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c;
  return alen < blen ? -1 : alen > blen;
}

uint64_t tern_terms_index_head(const uint8_t *k, size_t len) {
  uint8_t b[8] = {0};
  if (len) memcpy(b, k, len < 8 ? len : 8);
  uint64_t v;
  memcpy(&v, b, sizeof v);
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

size_t tern_terms_index_separator(const uint8_t *last, size_t last_len, const uint8_t *first,
                                  size_t first_len) {
  size_t n = last_len < first_len ? last_len : first_len, i = 0;
  while (i < n && last[i] == first[i]) i++;
  return i + 1 <= first_len ? i + 1 : first_len;
}

int tern_terms_index_put(tern_bytebuf *out, const uint8_t *prev_sep, size_t prev_len,
                         const uint8_t *sep, size_t len, uint32_t entries) {
  size_t shared = 0;
  while (shared < prev_len && shared < len && prev_sep[shared] == sep[shared]) shared++;
  TERN_TRY(tern_bytebuf_varint(out, shared));
  TERN_TRY(tern_bytebuf_bytes(out, sep + shared, len - shared));
  return tern_bytebuf_varint(out, entries);
}

void tern_terms_index_free(tern_terms_index *ix) {
  free(ix->heads);
  free(ix->heads2);
  free(ix->sep_off);
  free(ix->first_ord);
  free(ix->arena);
  memset(ix, 0, sizeof *ix);
}

size_t tern_terms_index_memory(const tern_terms_index *ix) {
  return ix->nblocks * (sizeof *ix->heads + TERN_TI_MORE * sizeof *ix->heads2 +
                        sizeof *ix->sep_off + sizeof *ix->first_ord) +
         (ix->nblocks ? ix->sep_off[ix->nblocks] : 0);
}

static int bad(const char *what, uint64_t b, const char *why) {
  return tern_fail(TERN_ECORRUPT, "%s: terms index, block %llu: %s", what, (unsigned long long)b,
                   why);
}

int tern_terms_index_decode(tern_terms_index *ix, const uint8_t **pp, const uint8_t *end,
                            uint64_t nblocks, uint64_t nterms, uint32_t max_entries,
                            const char *what) {
  memset(ix, 0, sizeof *ix);
  /* Every record takes at least 3 bytes: a hostile count cannot make us
   * allocate more than the file justifies. */
  if (nblocks > (uint64_t)(end - *pp) / 3) return bad(what, 0, "more blocks than bytes");
  ix->nblocks = nblocks;
  ix->heads = malloc((nblocks + 1) * sizeof *ix->heads);
  ix->heads2 = malloc((nblocks + 1) * TERN_TI_MORE * sizeof *ix->heads2);
  ix->sep_off = malloc((nblocks + 1) * sizeof *ix->sep_off);
  ix->first_ord = malloc((nblocks + 1) * sizeof *ix->first_ord);
  tern_bytebuf arena = {0};
  int rc = TERN_OK;
  if (!ix->heads || !ix->heads2 || !ix->sep_off || !ix->first_ord) {
    rc = tern_fail(TERN_ENOMEM, "%s: terms index: out of memory", what);
    goto out;
  }
  /* Never NULL, even when every separator is empty. */
  if ((rc = tern_bytebuf_reserve(&arena, 1)) != TERN_OK) goto out;
  const uint8_t *p = *pp;
  uint64_t ord = 0;
  size_t prev_off = 0, prev_len = 0;
  for (uint64_t b = 0; b < nblocks; b++) {
    uint64_t shared, slen, entries;
    if (tern_get_varint(&p, end, &shared) || tern_get_varint(&p, end, &slen)) {
      rc = bad(what, b, "truncated");
      goto out;
    }
    if (shared > prev_len || slen > SEP_MAX || shared + slen > SEP_MAX ||
        slen > (uint64_t)(end - p)) {
      rc = bad(what, b, "bad separator length");
      goto out;
    }
    if ((b == 0) != (shared + slen == 0)) {
      rc = bad(what, b, "only block 0 has an empty separator");
      goto out;
    }
    size_t off = arena.len;
    if ((rc = tern_bytebuf_reserve(&arena, (size_t)(shared + slen))) != TERN_OK) goto out;
    if (shared) memcpy(arena.p + off, arena.p + prev_off, (size_t)shared);
    if (slen) memcpy(arena.p + off + shared, p, (size_t)slen);
    arena.len += (size_t)(shared + slen);
    p += slen;
    if (arena.len > UINT32_MAX) {
      rc = bad(what, b, "index too large");
      goto out;
    }
    if (b && key_cmp(arena.p + prev_off, prev_len, arena.p + off, (size_t)(shared + slen)) >= 0) {
      rc = bad(what, b, "separators not ascending");
      goto out;
    }
    if (tern_get_varint(&p, end, &entries) || entries < 1 || entries > max_entries) {
      rc = bad(what, b, "bad entry count");
      goto out;
    }
    ix->sep_off[b] = (uint32_t)off;
    ix->first_ord[b] = ord;
    ord += entries;
    prev_off = off;
    prev_len = (size_t)(shared + slen);
  }
  if (ord != nterms) {
    rc = bad(what, nblocks, "entry counts do not add up to the field's terms");
    goto out;
  }
  ix->sep_off[nblocks] = (uint32_t)arena.len;
  ix->first_ord[nblocks] = ord;
  ix->arena = arena.p;
  arena.p = NULL;
  ix->skip = 0;
  if (nblocks >= 2) { /* separators ascend: the first and last share what all share */
    size_t l1, ll;
    const uint8_t *s1 = tern_terms_index_sep(ix, 1, &l1), *sl = tern_terms_index_sep(ix, nblocks - 1, &ll);
    while (ix->skip < l1 && ix->skip < ll && s1[ix->skip] == sl[ix->skip]) ix->skip++;
  }
  for (uint64_t b = 0; b < nblocks; b++) {
    size_t slen;
    const uint8_t *sep = tern_terms_index_sep(ix, b, &slen);
    size_t k = b ? ix->skip : slen; /* block 0's separator is empty */
    ix->heads[b] = tern_terms_index_head(sep + k, slen - k);
    for (size_t j = 0; j < TERN_TI_MORE; j++) {
      size_t at = k + 8 * (j + 1);
      ix->heads2[TERN_TI_MORE * b + j] = slen > at ? tern_terms_index_head(sep + at, slen - at) : 0;
    }
  }
  *pp = p;
out:
  tern_bytebuf_free(&arena);
  if (rc != TERN_OK) tern_terms_index_free(ix);
  return rc;
}

const uint8_t *tern_terms_index_sep(const tern_terms_index *ix, uint64_t b, size_t *len) {
  *len = ix->sep_off[b + 1] - ix->sep_off[b];
  return ix->arena + ix->sep_off[b];
}

/* The key's heads past the first (computed on the first tie). */
typedef struct key_heads {
  uint64_t h, more[TERN_TI_MORE];
  int have;
} key_heads;

/* sep(b) <= key (b >= 1; the key starts with the separators' shared
 * prefix), the heads deciding unless equal: the 8 bytes after that
 * prefix, then (keys sharing those too: paths, URLs) the next 8, 16 and
 * 24 — one line, as they are interleaved — then memcmp.  Zero-padded
 * heads order like the keys wherever they differ. */
static inline int sep_le(const tern_terms_index *ix, uint64_t b, key_heads *kh, const uint8_t *key,
                         size_t len) {
  uint64_t h = ix->heads[b];
  if (h != kh->h) return h < kh->h;
  if (!kh->have) {
    for (size_t j = 0; j < TERN_TI_MORE; j++)
      kh->more[j] = tern_terms_index_head_at(key, len, ix->skip + 8 * (j + 1));
    kh->have = 1;
  }
  const uint64_t *m = ix->heads2 + TERN_TI_MORE * b;
  for (size_t j = 0; j < TERN_TI_MORE; j++)
    if (m[j] != kh->more[j]) return m[j] < kh->more[j];
  size_t slen;
  const uint8_t *s = tern_terms_index_sep(ix, b, &slen);
  return key_cmp(s, slen, key, len) <= 0;
}

uint64_t tern_terms_index_find(const tern_terms_index *ix, const uint8_t *key, size_t len) {
  return tern_terms_index_find_head(ix, tern_terms_index_key_head(ix, key, len), key, len);
}

uint64_t tern_terms_index_find_head(const tern_terms_index *ix, uint64_t kh, const uint8_t *key,
                                    size_t len) {
  uint64_t lo = 0, n = ix->nblocks;
  if (ix->skip && n > 1) { /* against the prefix every separator past block 0 has */
    size_t l1;
    const uint8_t *s1 = tern_terms_index_sep(ix, 1, &l1);
    size_t m = len < ix->skip ? len : ix->skip;
    int c = memcmp(key, s1, m);
    if (c < 0 || (c == 0 && len < ix->skip)) return 0;
    if (c > 0) return n - 1;
  }
  key_heads k = {.h = kh, .have = 0};
  while (n > 1) {
    uint64_t half = n / 2;
    if (sep_le(ix, lo + half, &k, key, len)) lo += half;
    n -= half;
  }
  return lo;
}

uint64_t tern_terms_index_find_ordinal(const tern_terms_index *ix, uint64_t ord) {
  uint64_t lo = 0, n = ix->nblocks;
  while (n > 1) {
    uint64_t half = n / 2;
    if (ix->first_ord[lo + half] <= ord) lo += half;
    n -= half;
  }
  return lo;
}
