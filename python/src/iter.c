/* SPDX-License-Identifier: MIT */
/*
 * iter.c — tern.ScanIterator (tern_cursor_*) and tern.TermsIterator
 * (tern_terms_*): Python iterators that fetch entries in chunks with the
 * GIL released, belong to their snapshot, and close themselves when
 * exhausted.
 */
#include "pytern.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_FIRST 16
#define CHUNK_MAX 1024
#define CHUNK_BYTES (1u << 20)

typedef struct rec {
  size_t koff, klen, voff;
  uint64_t vlen; /* the value's length, or the term's docfreq */
} rec;

/* What both iterators share: the snapshot, the chunk, the state. */
typedef struct pt_iter {
  PyObject_HEAD
  pt_snapshot *snap;
  void *handle;   /* tern_cursor or tern_terms; NULL once closed */
  int busy, done, started;
  Py_ssize_t left; /* limit left, -1: none */
  pt_arena arena;
  rec *recs;
  size_t n, pos, want;
  PyObject *held; /* bytes objects the bounds point into */
  /* scan */
  int reverse, values;
  /* terms */
  PyObject *prefix, *start;
} pt_iter;

static int iter_claim(pt_iter *it) {
  if (it->busy) {
    pt_raise_msg(TERN_EBUSY, "the iterator is in use by another thread");
    return -1;
  }
  it->busy = 1;
  return 0;
}

static void iter_release_handle(pt_iter *it, int (*close_fn)(void *)) {
  if (!it->handle) return;
  close_fn(it->handle);
  it->handle = NULL;
  it->snap->children--;
}

static int cursor_close_fn(void *h) { return tern_cursor_close(h); }
static int terms_close_fn(void *h) { return tern_terms_close(h); }

static void iter_dealloc(pt_iter *it) {
  iter_release_handle(it, Py_TYPE(it) == &pt_scan_type ? cursor_close_fn : terms_close_fn);
  pt_arena_free(&it->arena);
  free(it->recs);
  Py_XDECREF(it->held);
  Py_XDECREF(it->prefix);
  Py_XDECREF(it->start);
  Py_XDECREF(it->snap);
  PyObject_Free(it);
}

static PyObject *iter_close(pt_iter *it, PyObject *u) {
  (void)u;
  if (iter_claim(it) < 0) return NULL;
  iter_release_handle(it, Py_TYPE(it) == &pt_scan_type ? cursor_close_fn : terms_close_fn);
  it->done = 1;
  it->n = it->pos = 0;
  it->busy = 0;
  Py_RETURN_NONE;
}

static pt_iter *iter_alloc(PyTypeObject *type, pt_snapshot *snap) {
  pt_iter *it = PyObject_New(pt_iter, type);
  if (!it) return NULL;
  memset((char *)it + sizeof(PyObject), 0, sizeof *it - sizeof(PyObject));
  it->snap = (pt_snapshot *)Py_NewRef(snap);
  it->left = -1;
  it->want = CHUNK_FIRST;
  it->recs = malloc(CHUNK_MAX * sizeof *it->recs);
  if (!it->recs) {
    Py_DECREF(it);
    PyErr_NoMemory();
    return NULL;
  }
  return it;
}

/* An owned copy of a bound (kept in it->held); NULL data for None. */
static int bound(pt_iter *it, PyObject *obj, tern_slice *out, const char *what) {
  out->data = NULL;
  out->len = 0;
  if (!obj || obj == Py_None) return 0;
  pt_bytes b;
  if (pt_bytes_get(obj, &b, what) < 0) return -1;
  PyObject *copy = PyBytes_FromStringAndSize(b.data, b.len);
  pt_bytes_release(&b);
  if (!copy || PyList_Append(it->held, copy) < 0) {
    Py_XDECREF(copy);
    return -1;
  }
  Py_DECREF(copy);
  out->data = PyBytes_AS_STRING(copy);
  out->len = (size_t)PyBytes_GET_SIZE(copy);
  return 0;
}

static size_t chunk_size(pt_iter *it) {
  size_t n = it->want;
  if (it->want < CHUNK_MAX) it->want *= 2;
  if (it->left >= 0 && (size_t)it->left < n) n = (size_t)it->left;
  return n;
}

/* ---- scan ---- */

/* Fills a chunk without the GIL; returns a status (NOTFOUND: the end). */
static int scan_fill(pt_iter *it, size_t max) {
  tern_cursor *c = it->handle;
  int st = TERN_OK;
  it->arena.len = 0;
  it->n = it->pos = 0;
  while (it->n < max && it->arena.len < CHUNK_BYTES) {
    if (!it->started) {
      st = it->reverse ? tern_cursor_last(c) : tern_cursor_first(c);
      it->started = 1;
    } else {
      st = it->reverse ? tern_cursor_prev(c) : tern_cursor_next(c);
    }
    if (st) break;
    tern_slice k, v = {NULL, 0};
    rec *r = &it->recs[it->n];
    if ((st = tern_cursor_key(c, &k)) != 0) break;
    if (pt_arena_put(&it->arena, k.data, k.len, &r->koff)) return TERN_ENOMEM;
    r->klen = k.len;
    if (it->values) {
      if ((st = tern_cursor_value(c, &v)) != 0) break;
      if (pt_arena_put(&it->arena, v.data, v.len, &r->voff)) return TERN_ENOMEM;
    }
    r->vlen = v.len;
    it->n++;
  }
  return st;
}

static PyObject *scan_item(pt_iter *it, const rec *r) {
  PyObject *k = PyBytes_FromStringAndSize(it->arena.buf + r->koff, (Py_ssize_t)r->klen);
  if (!k || !it->values) return k;
  PyObject *v = PyBytes_FromStringAndSize(it->arena.buf + r->voff, (Py_ssize_t)r->vlen);
  if (!v) {
    Py_DECREF(k);
    return NULL;
  }
  PyObject *t = PyTuple_New(2);
  if (!t) {
    Py_DECREF(k);
    Py_DECREF(v);
    return NULL;
  }
  PyTuple_SET_ITEM(t, 0, k);
  PyTuple_SET_ITEM(t, 1, v);
  return t;
}

/* ---- terms ---- */

static int has_prefix(const tern_slice *t, PyObject *prefix) {
  if (!prefix) return 1;
  size_t n = (size_t)PyBytes_GET_SIZE(prefix);
  return t->len >= n && memcmp(t->data, PyBytes_AS_STRING(prefix), n) == 0;
}

static int terms_fill(pt_iter *it, size_t max) {
  tern_terms *te = it->handle;
  int st = TERN_OK;
  it->arena.len = 0;
  it->n = it->pos = 0;
  while (it->n < max && it->arena.len < CHUNK_BYTES) {
    if (!it->started && it->start) {
      st = tern_terms_seek_ceil(te, PyBytes_AS_STRING(it->start),
                                (size_t)PyBytes_GET_SIZE(it->start), NULL);
    } else {
      st = tern_terms_next(te);
    }
    it->started = 1;
    if (st) break;
    tern_slice t;
    uint64_t df;
    if ((st = tern_terms_term(te, &t)) != 0 || (st = tern_terms_docfreq(te, &df)) != 0) break;
    if (!has_prefix(&t, it->prefix)) return TERN_NOTFOUND;
    rec *r = &it->recs[it->n];
    if (pt_arena_put(&it->arena, t.data, t.len, &r->koff)) return TERN_ENOMEM;
    r->klen = t.len;
    r->vlen = df;
    it->n++;
  }
  return st;
}

static PyObject *terms_item(pt_iter *it, const rec *r) {
  return Py_BuildValue("(y#K)", it->arena.buf + r->koff, (Py_ssize_t)r->klen,
                       (unsigned long long)r->vlen);
}

/* ---- iteration shared ---- */

static PyObject *iter_next(pt_iter *it) {
  int scan = Py_TYPE(it) == &pt_scan_type;
  if (iter_claim(it) < 0) return NULL;
  PyObject *r = NULL;
  if (it->pos == it->n && !it->done) {
    if (!it->snap->snap) {
      it->busy = 0;
      return pt_raise_msg(PT_CLOSED, "the snapshot is closed");
    }
    size_t max = chunk_size(it);
    int st = TERN_NOTFOUND;
    if (max > 0) {
      it->snap->inflight++;
      Py_BEGIN_ALLOW_THREADS
      st = scan ? scan_fill(it, max) : terms_fill(it, max);
      Py_END_ALLOW_THREADS
      it->snap->inflight--;
    }
    if (st == TERN_NOTFOUND) it->done = 1;
    else if (st) {
      it->done = 1;
      it->n = it->pos = 0;
      iter_release_handle(it, scan ? cursor_close_fn : terms_close_fn);
      it->busy = 0;
      return pt_raise(st);
    }
  }
  if (it->pos < it->n) {
    const rec *rc = &it->recs[it->pos++];
    r = scan ? scan_item(it, rc) : terms_item(it, rc);
    if (it->left > 0) it->left--;
  }
  if (!r && it->done && it->pos == it->n)
    iter_release_handle(it, scan ? cursor_close_fn : terms_close_fn);
  it->busy = 0;
  return r; /* NULL without an exception: StopIteration */
}

static PyObject *iter_self(PyObject *it) { return Py_NewRef(it); }

static PyObject *iter_enter(pt_iter *it, PyObject *u) {
  (void)u;
  return Py_NewRef(it);
}

static PyObject *iter_exit(pt_iter *it, PyObject *args) {
  (void)args;
  return iter_close(it, NULL);
}

static PyMethodDef iter_methods[] = {
    {"close", (PyCFunction)iter_close, METH_NOARGS,
     "close()\n--\n\nCloses the iterator before it is exhausted (an exhausted one closed "
     "itself); its snapshot may then be closed."},
    {"__enter__", (PyCFunction)iter_enter, METH_NOARGS, "Returns the iterator itself."},
    {"__exit__", (PyCFunction)iter_exit, METH_VARARGS, "Closes the iterator."},
    {NULL, NULL, 0, NULL},
};

PyObject *pt_scan_new(pt_snapshot *snap, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"prefix", "start", "stop", "reverse", "limit", "values", NULL};
  PyObject *prefix = NULL, *start = NULL, *stop = NULL, *limit = Py_None;
  int reverse = 0, values = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOpOp", kwlist, &prefix, &start, &stop,
                                   &reverse, &limit, &values))
    return NULL;
  pt_iter *it = iter_alloc(&pt_scan_type, snap);
  if (!it) return NULL;
  it->reverse = reverse;
  it->values = values;
  if (limit != Py_None) {
    it->left = PyLong_AsSsize_t(limit);
    if (it->left == -1 && PyErr_Occurred()) goto fail;
    if (it->left < 0) {
      pt_raise_msg(TERN_EINVAL, "limit must be >= 0");
      goto fail;
    }
  }
  tern_bounds b;
  if (!(it->held = PyList_New(0)) || bound(it, prefix, &b.prefix, "prefix") < 0 ||
      bound(it, start, &b.from, "start") < 0 || bound(it, stop, &b.to, "stop") < 0)
    goto fail;
  tern_cursor *c;
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = tern_cursor_open(&c, snap->snap, &b);
  Py_END_ALLOW_THREADS
  if (st) {
    pt_raise(st);
    goto fail;
  }
  it->handle = c;
  snap->children++;
  return (PyObject *)it;
fail:
  Py_DECREF(it);
  return NULL;
}

PyObject *pt_terms_new(pt_snapshot *snap, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"field", "prefix", "start", NULL};
  PyObject *field, *prefix = NULL, *start = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO", kwlist, &field, &prefix, &start))
    return NULL;
  pt_iter *it = iter_alloc(&pt_terms_type, snap);
  if (!it) return NULL;
  tern_slice p, s;
  if (!(it->held = PyList_New(0)) || bound(it, prefix, &p, "prefix") < 0 ||
      bound(it, start, &s, "start") < 0 || bound(it, field, &s, "field") < 0)
    goto fail;
  /* held: [prefix?, start?, field]; the field is the last one appended. */
  PyObject *fb = PyList_GET_ITEM(it->held, PyList_GET_SIZE(it->held) - 1);
  if ((size_t)PyBytes_GET_SIZE(fb) != strlen(PyBytes_AS_STRING(fb))) {
    pt_raise_msg(TERN_EINVAL, "a field name holds no NUL byte");
    goto fail;
  }
  Py_ssize_t i = 0;
  if (prefix && prefix != Py_None) it->prefix = Py_NewRef(PyList_GET_ITEM(it->held, i++));
  if (start && start != Py_None) it->start = Py_NewRef(PyList_GET_ITEM(it->held, i++));
  /* Begin at the larger of start and prefix. */
  if (it->prefix && (!it->start || PyObject_RichCompareBool(it->prefix, it->start, Py_GT) == 1))
    Py_XSETREF(it->start, Py_NewRef(it->prefix));
  tern_terms *te;
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = tern_terms_open(&te, snap->snap, PyBytes_AS_STRING(fb));
  Py_END_ALLOW_THREADS
  if (st) {
    pt_raise(st);
    goto fail;
  }
  it->handle = te;
  snap->children++;
  return (PyObject *)it;
fail:
  Py_DECREF(it);
  return NULL;
}

PyTypeObject pt_scan_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tern.ScanIterator",
    .tp_basicsize = sizeof(pt_iter),
    .tp_dealloc = (destructor)iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An iterator over a snapshot's live documents in key order (Snapshot.scan()): "
              "(key, value) pairs, or keys.  It belongs to the snapshot: exhausted, closed "
              "or dropped before the snapshot is closed.  One thread at a time.",
    .tp_iter = iter_self,
    .tp_iternext = (iternextfunc)iter_next,
    .tp_methods = iter_methods,
};

PyTypeObject pt_terms_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tern.TermsIterator",
    .tp_basicsize = sizeof(pt_iter),
    .tp_dealloc = (destructor)iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An iterator over one field's terms in byte order (Snapshot.terms()): (term, "
              "docfreq) pairs.  Same lifetime rules as ScanIterator.",
    .tp_iter = iter_self,
    .tp_iternext = (iternextfunc)iter_next,
    .tp_methods = iter_methods,
};
