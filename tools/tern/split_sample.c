/* SPDX-License-Identifier: MIT */
/*
 * split_sample.c — `tern split FILE N`: the keys that cut a TSV input's
 * keys into N parts of about equal size, from a sample, for building the
 * parts in parallel (`tern build --split-at`) before any index exists.
 *
 * A regular file is sampled where it lies: SAMPLE_CHUNKS reads of
 * CHUNK bytes spread evenly over it, each giving the keys of the whole
 * lines inside it (a few MiB read of a file of any size).  Anything else
 * (a pipe, standard input, a file too small to sample) is read whole, and
 * a reservoir keeps a uniform sample of RESERVOIR keys.  The sample is
 * sorted and its N-quantiles printed, escaped, one a line: as `tern split
 * DIR N` prints them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "out.h"
#include "tsv.h"

enum { SAMPLE_CHUNKS = 2048, CHUNK = 4096, RESERVOIR = 1 << 17 };

typedef struct sample {
  tern_slice *keys; /* each malloc'd */
  size_t n, cap;
  uint64_t seen; /* keys offered (the reservoir's denominator) */
  uint64_t rng;
  const char *file;
} sample;

static uint64_t next_random(sample *s) {
  s->rng ^= s->rng << 13;
  s->rng ^= s->rng >> 7;
  s->rng ^= s->rng << 17;
  return s->rng;
}

static int keep_key(sample *s, size_t at, const char *key, size_t len) {
  char *copy = malloc(len);
  if (!copy) return cli_error("%s", strerror(ENOMEM));
  memcpy(copy, key, len);
  if (at == s->n) {
    if (s->n == s->cap) {
      size_t cap = s->cap ? 2 * s->cap : 4096;
      tern_slice *k = realloc(s->keys, cap * sizeof *k);
      if (!k) {
        free(copy);
        return cli_error("%s", strerror(ENOMEM));
      }
      s->keys = k;
      s->cap = cap;
    }
    s->n++;
  } else {
    free((void *)s->keys[at].data);
  }
  s->keys[at] = (tern_slice){copy, len};
  return 0;
}

/* Offers one line's key: kept always (chunks) or by the reservoir. */
static int offer_line(sample *s, char *line, size_t len, int reservoir, uint64_t where) {
  if (len == 0) return 0;
  char *tab = memchr(line, '\t', len);
  size_t klen;
  tsv_error err;
  if (tsv_parse_key(line, tab ? (size_t)(tab - line) : len, &klen, &err))
    return reservoir ? cli_line_error(s->file, where, err.reason)
                     : cli_error("%s: the line at byte %llu: %s", s->file,
                                 (unsigned long long)where, err.reason);
  uint64_t i = s->seen++;
  if (!reservoir || i < RESERVOIR) return keep_key(s, s->n, line, klen);
  uint64_t j = next_random(s) % (i + 1);
  return j < RESERVOIR ? keep_key(s, (size_t)j, line, klen) : 0;
}

static int sample_stream(sample *s, int fd) {
  tsv_reader rd;
  if (tsv_reader_init(&rd, fd, 1 << 20)) return cli_error("%s", strerror(ENOMEM));
  char *line;
  size_t len;
  int rc;
  while ((rc = tsv_read_line(&rd, &line, &len)) > 0)
    if (offer_line(s, line, len, 1, rd.line)) break;
  tsv_reader_free(&rd);
  if (rc > 0) return CLI_FAIL;
  if (rc == -E2BIG) return cli_line_error(s->file, rd.line + 1, "line longer than 1 GiB");
  if (rc < 0) return cli_error("%s: %s", s->file, strerror(-rc));
  return 0;
}

/* The whole lines of the chunk at `off` (the first only when it starts
 * there: the line cut by the chunk's start belongs to the chunk before). */
static int sample_chunk(sample *s, int fd, uint64_t off, char *buf) {
  ssize_t got = pread(fd, buf, CHUNK, (off_t)off);
  if (got < 0) return cli_error("%s: %s", s->file, strerror(errno));
  char *p = buf, *end = buf + got;
  if (off > 0) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    p = nl ? nl + 1 : end;
  }
  for (char *nl; p < end && (nl = memchr(p, '\n', (size_t)(end - p))); p = nl + 1) {
    size_t len = (size_t)(nl - p);
    if (len && p[len - 1] == '\r') len--;
    if (offer_line(s, p, len, 0, off + (uint64_t)(p - buf))) return CLI_FAIL;
  }
  return 0;
}

static int sample_file(sample *s, int fd, uint64_t size) {
  char *buf = malloc(CHUNK);
  if (!buf) return cli_error("%s", strerror(ENOMEM));
  int rc = 0;
  for (uint64_t i = 0; rc == 0 && i < SAMPLE_CHUNKS; i++)
    rc = sample_chunk(s, fd, size / SAMPLE_CHUNKS * i, buf);
  free(buf);
  return rc;
}

static int slice_cmp(const void *a, const void *b) {
  const tern_slice *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->data, y->data, n);
  return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The sample's N-quantiles, each above the one before and the smallest key. */
static void print_cuts(sample *s, size_t parts) {
  qsort(s->keys, s->n, sizeof *s->keys, slice_cmp);
  const tern_slice *prev = s->n ? &s->keys[0] : NULL;
  for (size_t i = 1; s->n && i < parts; i++) {
    const tern_slice *k = &s->keys[(size_t)((uint64_t)s->n * i / parts)];
    if (slice_cmp(k, prev) <= 0) continue; /* too few distinct keys */
    out_escaped(&g_out, k->data, k->len);
    out_char(&g_out, '\n');
    prev = k;
  }
}

int cli_split_tsv(const char *file, size_t parts) {
  int fd = strcmp(file, "-") ? open(file, O_RDONLY | O_CLOEXEC) : 0;
  if (fd < 0) return cli_error("%s: %s", file, strerror(errno));
  sample s = {.rng = 0x9e3779b97f4a7c15ull, .file = strcmp(file, "-") ? file : "standard input"};
  struct stat sb;
  int rc;
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
      (uint64_t)sb.st_size > 4ull * SAMPLE_CHUNKS * CHUNK)
    rc = sample_file(&s, fd, (uint64_t)sb.st_size);
  else
    rc = sample_stream(&s, fd);
  if (rc == 0) print_cuts(&s, parts);
  for (size_t i = 0; i < s.n; i++)
    free((void *)s.keys[i].data);
  free(s.keys);
  if (fd > 0) close(fd);
  return rc ? CLI_FAIL : CLI_OK;
}
