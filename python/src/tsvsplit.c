/* SPDX-License-Identifier: MIT */
/*
 * tsvsplit.c — the first half of tern.dask's C path for TSV sources:
 *
 *  _tsv_sample(path, start, end, k, seed): keys of about k lines of the
 *    byte range, for the range boundaries (a few preads, no full read);
 *  _tsv_split(path, start, end, bounds): the lines of the byte range
 *    parsed as `tern import` parses them (tools/tern/tsv.c) and appended,
 *    decoded (tsvrec.h), to one bytes object per key range.
 *
 * A byte range [start, end) of a file holds the lines that START in it:
 * the line running across `start` belongs to the range before, the last
 * line is read to its end past `end`.  So ranges cut anywhere cover every
 * line exactly once.  A malformed line is tern.InvalidError
 * "FILE:LINE: reason", LINE counted from the file's start (only then are
 * the newlines before the range counted).  The GIL is released around the
 * reading and parsing.
 */
#include "pytern.h"

#ifdef PT_HAVE_TSV

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "escape.h"
#include "tsv.h"
#include "tsvrec.h"

/* pread until n bytes or the end of the file; returns the bytes read or
 * -errno. */
static ssize_t pread_full(int fd, char *buf, size_t n, off_t off) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, buf + got, n - got, off + (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -errno;
    if (r == 0) break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

/* A byte range read into memory, from start-1 (to see whether a line
 * begins at start) through the end of the line running across `end`. */
typedef struct block {
  char *buf;
  size_t len;
  off_t base; /* file offset of buf[0] */
  size_t first; /* buf offset of the first line starting in the range */
  size_t stop;  /* lines starting at buf offsets below this are the range's */
} block;

/* Reads on until the line running across `stop` has its newline (or the
 * file ends: the last line needs none). */
static int block_extend(int fd, block *b, size_t *cap) {
  if (b->stop == 0) return 0;
  size_t from = b->stop - 1;
  for (;;) {
    if (memchr(b->buf + from, '\n', b->len - from)) return 0;
    from = b->len;
    if (*cap - b->len < 65536) {
      size_t ncap = *cap * 2 + 65536;
      char *n = realloc(b->buf, ncap);
      if (!n) return -ENOMEM;
      b->buf = n;
      *cap = ncap;
    }
    ssize_t r = pread_full(fd, b->buf + b->len, *cap - b->len, b->base + (off_t)b->len);
    if (r < 0) return (int)r;
    if (r == 0) return 0;
    b->len += (size_t)r;
  }
}

static int block_read(int fd, uint64_t start, uint64_t end, block *b) {
  memset(b, 0, sizeof *b);
  struct stat sb;
  if (fstat(fd, &sb) < 0) return -errno;
  uint64_t size = (uint64_t)sb.st_size;
  if (end > size) end = size;
  if (start >= end) return 0;
  b->base = (off_t)(start ? start - 1 : 0);
  size_t want = (size_t)(end - (uint64_t)b->base), cap = want + 65536;
  b->buf = malloc(cap);
  if (!b->buf) return -ENOMEM;
  ssize_t r = pread_full(fd, b->buf, want, b->base);
  if (r < 0) return (int)r;
  b->len = (size_t)r;
  b->stop = b->len;
  int rc = block_extend(fd, b, &cap);
  if (rc) return rc;
  if (start) { /* past the line running across start (ends at buf[0] when one starts there) */
    char *nl = memchr(b->buf, '\n', b->stop);
    b->first = nl ? (size_t)(nl - b->buf) + 1 : b->stop;
  }
  return 0;
}

/* ---- _tsv_split ---- */

typedef struct splitter {
  const tern_slice *bounds;
  size_t nb;
  pt_arena *out; /* nb + 1 */
  tsv_doc doc;
  tsv_error err;
  off_t bad_at; /* file offset of the malformed line, -1: none */
} splitter;

/* The range of `key`: how many boundaries are <= key. */
static size_t range_of(const splitter *s, const char *key, size_t klen) {
  size_t lo = 0, hi = s->nb;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const tern_slice *b = &s->bounds[mid];
    size_t n = b->len < klen ? b->len : klen;
    int c = memcmp(b->data, key, n);
    if (c < 0 || (c == 0 && b->len <= klen)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int append_doc(splitter *s) {
  const tsv_doc *d = &s->doc;
  size_t need = TSVREC_HEAD + d->klen + d->vlen;
  for (size_t i = 0; i < d->nterms; i++)
    need += TSVREC_TERM_HEAD + strlen(d->terms[i].field) + 1 + d->terms[i].len;
  pt_arena *a = &s->out[range_of(s, d->key, d->klen)];
  size_t off;
  if (pt_arena_put(a, NULL, need, &off)) return -ENOMEM;
  uint8_t *p = (uint8_t *)a->buf + off;
  tsvrec_put32(p, (uint32_t)d->klen);
  tsvrec_put32(p + 4, (uint32_t)d->vlen);
  tsvrec_put32(p + 8, (uint32_t)d->nterms);
  p += TSVREC_HEAD;
  memcpy(p, d->key, d->klen);
  p += d->klen;
  if (d->vlen) memcpy(p, d->val, d->vlen);
  p += d->vlen;
  for (size_t i = 0; i < d->nterms; i++) {
    size_t flen = strlen(d->terms[i].field) + 1;
    tsvrec_put32(p, (uint32_t)flen);
    tsvrec_put32(p + 4, (uint32_t)d->terms[i].len);
    memcpy(p + TSVREC_TERM_HEAD, d->terms[i].field, flen);
    memcpy(p + TSVREC_TERM_HEAD + flen, d->terms[i].term, d->terms[i].len);
    p += TSVREC_TERM_HEAD + flen + d->terms[i].len;
  }
  return 0;
}

/* Parses every line of the block into the ranges' arenas.  Returns 0,
 * -errno, or 1 for a malformed line (s->bad_at, s->err). */
static int split_block(splitter *s, block *b) {
  size_t pos = b->first;
  while (pos < b->stop) {
    char *line = b->buf + pos;
    char *nl = memchr(line, '\n', b->len - pos);
    size_t len = nl ? (size_t)(nl - line) : b->len - pos;
    size_t next = pos + len + 1;
    if (len && line[len - 1] == '\r') len--;
    if (len) {
      int rc = tsv_parse_doc(line, len, &s->doc, &s->err);
      if (rc == -1) {
        s->bad_at = b->base + (off_t)pos;
        return 1;
      }
      if (rc) return rc;
      if (append_doc(s)) return -ENOMEM;
    }
    pos = next;
  }
  return 0;
}

/* The 1-based number of the line starting at file offset `at`. */
static int line_number(int fd, off_t at, uint64_t *line) {
  char buf[65536];
  *line = 1;
  for (off_t off = 0; off < at;) {
    size_t n = (size_t)(at - off) < sizeof buf ? (size_t)(at - off) : sizeof buf;
    ssize_t r = pread_full(fd, buf, n, off);
    if (r <= 0) return r < 0 ? (int)r : -EIO;
    for (const char *p = buf; (p = memchr(p, '\n', (size_t)(buf + r - p))) != NULL; p++)
      (*line)++;
    off += r;
  }
  return 0;
}

/* The boundaries as slices into the bytes objects of `seq` (held by the
 * caller). */
static tern_slice *get_bounds(PyObject *seq, size_t *nb) {
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  tern_slice *b = PyMem_Calloc((size_t)n + 1, sizeof *b);
  if (!b) return (tern_slice *)PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
    if (!PyBytes_Check(o)) {
      PyMem_Free(b);
      PyErr_SetString(PyExc_TypeError, "boundaries must be bytes");
      return NULL;
    }
    b[i].data = PyBytes_AS_STRING(o);
    b[i].len = (size_t)PyBytes_GET_SIZE(o);
  }
  *nb = (size_t)n;
  return b;
}

/* The arenas as a tuple of bytes objects (freeing them). */
static PyObject *arenas_tuple(pt_arena *out, size_t n) {
  PyObject *t = PyTuple_New((Py_ssize_t)n);
  for (size_t i = 0; i < n; i++) {
    PyObject *o = t ? PyBytes_FromStringAndSize(out[i].buf, (Py_ssize_t)out[i].len) : NULL;
    if (t && !o) Py_CLEAR(t);
    if (o) PyTuple_SET_ITEM(t, (Py_ssize_t)i, o);
    pt_arena_free(&out[i]);
  }
  return t;
}

/* InvalidError "FILE:LINE: reason" for the malformed line. */
static PyObject *split_error(int fd, const splitter *s, PyObject *path) {
  uint64_t line = 0;
  int lr;
  Py_BEGIN_ALLOW_THREADS
  lr = line_number(fd, s->bad_at, &line);
  Py_END_ALLOW_THREADS
  char msg[sizeof s->err.reason + 64];
  if (lr)
    snprintf(msg, sizeof msg, "line at byte %lld: %s", (long long)s->bad_at, s->err.reason);
  else
    snprintf(msg, sizeof msg, "%llu: %s", (unsigned long long)line, s->err.reason);
  PyObject *text = PyUnicode_FromFormat("%S:%s", path, msg);
  if (!text) return NULL;
  pt_raise_msg(TERN_EINVAL, PyUnicode_AsUTF8(text));
  Py_DECREF(text);
  return NULL;
}

PyObject *pt_tsv_split(PyObject *m, PyObject *args) {
  (void)m;
  PyObject *path, *fspath = NULL, *bseq = NULL, *r = NULL;
  unsigned long long start, end;
  if (!PyArg_ParseTuple(args, "OKKO", &path, &start, &end, &bseq)) return NULL;
  if (!PyUnicode_FSConverter(path, &fspath)) return NULL;
  PyObject *seq = PySequence_Fast(bseq, "boundaries must be a sequence of bytes");
  splitter s = {0};
  s.bad_at = -1;
  tsv_doc_init(&s.doc);
  int fd = -1;
  if (!seq || !(s.bounds = get_bounds(seq, &s.nb))) goto out;
  s.out = PyMem_Calloc(s.nb + 1, sizeof *s.out);
  if (!s.out) {
    PyErr_NoMemory();
    goto out;
  }
  int rc;
  const char *p = PyBytes_AS_STRING(fspath);
  Py_BEGIN_ALLOW_THREADS
  block b = {0};
  fd = open(p, O_RDONLY | O_CLOEXEC);
  rc = fd < 0 ? -errno : block_read(fd, start, end, &b);
  if (!rc) rc = split_block(&s, &b);
  free(b.buf);
  Py_END_ALLOW_THREADS
  if (rc) {
    errno = rc < 0 ? -rc : 0;
    r = rc < 0 ? PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path)
               : split_error(fd, &s, path);
  } else {
    r = arenas_tuple(s.out, s.nb + 1);
  }
out:
  if (fd >= 0) close(fd);
  if (s.out)
    for (size_t i = 0; i <= s.nb; i++) pt_arena_free(&s.out[i]);
  PyMem_Free(s.out);
  PyMem_Free((void *)s.bounds);
  tsv_doc_free(&s.doc);
  Py_XDECREF(seq);
  Py_DECREF(fspath);
  return r;
}

/* ---- _tsv_sample ---- */

/* Windows read around a sampled offset: most lines' keys fit the first;
 * a key longer than it (up to TERN_KEY_MAX bytes, escaped) the second. */
#define SAMPLE_WIN 512
#define SAMPLE_WIN_MAX (4 * TERN_KEY_MAX + 4096)

/* The decoded key of the line starting at or after file offset `off` (the
 * first line when off is 0) into *out; 0 when none was found within a
 * window (a long line, the end of the file, a malformed key). */
static int sample_key(int fd, uint64_t off, uint64_t end, char *win, size_t wcap,
                      pt_arena *out) {
  ssize_t r = pread_full(fd, win, wcap, (off_t)(off ? off - 1 : 0));
  if (r <= 0) return r < 0 ? (int)r : 0;
  char *p = win, *e = win + r;
  if (off) {
    char *nl = memchr(win, '\n', (size_t)r);
    if (!nl) return 0;
    p = nl + 1;
    if ((uint64_t)(p - win) + off - 1 >= end) return 0; /* not the range's line */
  }
  char *tab = memchr(p, '\t', (size_t)(e - p));
  char *nl = memchr(p, '\n', (size_t)(e - p));
  if (!tab && !nl && (size_t)r == wcap && wcap < SAMPLE_WIN_MAX) /* a long key: a wider window */
    return sample_key(fd, off, end, win, SAMPLE_WIN_MAX, out);
  if (!tab || (nl && nl < tab)) return 0;
  size_t klen;
  esc_error err;
  if (esc_decode(p, (size_t)(tab - p), p, &klen, &err) || klen == 0 || klen > TERN_KEY_MAX)
    return 0;
  uint8_t len[4];
  size_t at;
  tsvrec_put32(len, (uint32_t)klen);
  if (pt_arena_put(out, len, 4, &at) || pt_arena_put(out, p, klen, &at)) return -ENOMEM;
  return 0;
}

PyObject *pt_tsv_sample(PyObject *m, PyObject *args) {
  (void)m;
  PyObject *path, *fspath = NULL;
  unsigned long long start, end, seed;
  Py_ssize_t k;
  if (!PyArg_ParseTuple(args, "OKKnK", &path, &start, &end, &k, &seed)) return NULL;
  if (!PyUnicode_FSConverter(path, &fspath)) return NULL;
  pt_arena out = {NULL, 0, 0};
  int rc = 0;
  const char *p = PyBytes_AS_STRING(fspath);
  Py_BEGIN_ALLOW_THREADS
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  char *win = malloc(SAMPLE_WIN_MAX);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) < 0) rc = -errno;
  else if (!win) rc = -ENOMEM;
  if (!rc && end > (uint64_t)sb.st_size) end = (uint64_t)sb.st_size;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + start + 1;
  for (Py_ssize_t i = 0; !rc && start < end && i < k; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
    rc = sample_key(fd, start + x % (end - start), end, win, SAMPLE_WIN, &out);
  }
  free(win);
  if (fd >= 0) close(fd);
  Py_END_ALLOW_THREADS
  PyObject *r = NULL;
  if (rc) {
    errno = -rc;
    PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
  } else {
    r = PyBytes_FromStringAndSize(out.buf, (Py_ssize_t)out.len);
  }
  pt_arena_free(&out);
  Py_DECREF(fspath);
  return r;
}

#endif /* PT_HAVE_TSV */
