/* SPDX-License-Identifier: MIT */
/*
 * search.c — (field, term) pairs from Python, Snapshot.search() and
 * Snapshot.count() over tern_postings_*.
 */
#include "pytern.h"

#include <stdlib.h>
#include <string.h>

void pt_termv_free(pt_termv *t) {
  for (Py_ssize_t i = 0; i < t->n; i++) {
    pt_bytes_release(&t->held[i]);
    Py_XDECREF(t->fields[i]);
  }
  PyMem_Free(t->terms);
  PyMem_Free(t->held);
  PyMem_Free(t->fields);
  t->terms = NULL;
  t->held = NULL;
  t->fields = NULL;
  t->n = 0;
}

static PyObject *field_bytes(PyObject *f) {
  PyObject *b = PyUnicode_Check(f) ? PyUnicode_AsUTF8String(f)
                : PyBytes_Check(f) ? Py_NewRef(f)
                                   : NULL;
  if (!b) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_TypeError, "a field must be str or bytes, not %.100s",
                   Py_TYPE(f)->tp_name);
    return NULL;
  }
  if ((size_t)PyBytes_GET_SIZE(b) != strlen(PyBytes_AS_STRING(b))) {
    Py_DECREF(b);
    pt_raise_msg(TERN_EINVAL, "a field name holds no NUL byte");
    return NULL;
  }
  return b;
}

int pt_termv_get(PyObject *seq_in, pt_termv *out) {
  PyObject *seq = PySequence_Fast(seq_in, "terms must be an iterable of (field, term) pairs");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  out->n = 0;
  out->terms = PyMem_Calloc((size_t)n + 1, sizeof *out->terms);
  out->held = PyMem_Calloc((size_t)n + 1, sizeof *out->held);
  out->fields = PyMem_Calloc((size_t)n + 1, sizeof *out->fields);
  if (!out->terms || !out->held || !out->fields) {
    PyErr_NoMemory();
    goto fail;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
      PyErr_SetString(PyExc_TypeError, "each term must be a (field, term) tuple");
      goto fail;
    }
    PyObject *fb = field_bytes(PyTuple_GET_ITEM(pair, 0));
    if (!fb) goto fail;
    out->fields[i] = fb;
    out->n = i + 1;
    if (pt_bytes_get(PyTuple_GET_ITEM(pair, 1), &out->held[i], "term") < 0) {
      out->held[i].has_view = 0;
      goto fail;
    }
    out->terms[i].field = PyBytes_AS_STRING(fb);
    out->terms[i].term = out->held[i].data;
    out->terms[i].len = (size_t)out->held[i].len;
  }
  Py_DECREF(seq);
  return 0;
fail:
  pt_termv_free(out);
  Py_DECREF(seq);
  return -1;
}

typedef struct hit {
  size_t koff, klen, voff, vlen;
} hit;

typedef struct hits {
  pt_arena arena;
  hit *v;
  size_t n, cap, limit;
  int values;
  int why; /* why collect stopped the walk: 0 the limit, else a status */
} hits;

/* Stops the walk (tern_postings_each_by_key then returns TERN_ESTOPPED);
 * h->why says why. */
static int stop(hits *h, int why) {
  h->why = why;
  return 1;
}

static int collect(void *payload, tern_slice key, tern_slice val) {
  hits *h = payload;
  if (h->n == h->limit) return stop(h, 0);
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 64;
    hit *nv = realloc(h->v, cap * sizeof *nv);
    if (!nv) return stop(h, TERN_ENOMEM);
    h->v = nv;
    h->cap = cap;
  }
  hit *x = &h->v[h->n];
  if (pt_arena_put(&h->arena, key.data, key.len, &x->koff)) return stop(h, TERN_ENOMEM);
  x->klen = key.len;
  x->vlen = 0;
  if (h->values) {
    if (pt_arena_put(&h->arena, val.data, val.len, &x->voff)) return stop(h, TERN_ENOMEM);
    x->vlen = val.len;
  }
  h->n++;
  return 0;
}

static PyObject *hits_list(const hits *h) {
  PyObject *list = PyList_New((Py_ssize_t)h->n);
  if (!list) return NULL;
  for (size_t i = 0; i < h->n; i++) {
    const hit *x = &h->v[i];
    PyObject *o = h->values ? Py_BuildValue("(y#y#)", h->arena.buf + x->koff,
                                            (Py_ssize_t)x->klen, h->arena.buf + x->voff,
                                            (Py_ssize_t)x->vlen)
                            : PyBytes_FromStringAndSize(h->arena.buf + x->koff,
                                                        (Py_ssize_t)x->klen);
    if (!o) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, o);
  }
  return list;
}

static int need_terms(PyObject *args, pt_termv *tv) {
  if (PyTuple_GET_SIZE(args) == 0) {
    pt_raise_msg(TERN_EINVAL, "search() needs at least one (field, term) pair");
    return -1;
  }
  return pt_termv_get(args, tv);
}

PyObject *pt_snap_search(pt_snapshot *self, PyObject *args, PyObject *kw) {
  int values = 0;
  Py_ssize_t limit = -1;
  if (kw) {
    PyObject *v = PyDict_GetItemString(kw, "values"), *l = PyDict_GetItemString(kw, "limit");
    if (PyDict_Size(kw) > (v != NULL) + (l != NULL)) {
      PyErr_SetString(PyExc_TypeError, "search() takes only values= and limit= keywords");
      return NULL;
    }
    if (v && (values = PyObject_IsTrue(v)) < 0) return NULL;
    if (l && l != Py_None) {
      limit = PyLong_AsSsize_t(l);
      if (limit == -1 && PyErr_Occurred()) return NULL;
      if (limit < 0) return pt_raise_msg(TERN_EINVAL, "limit must be >= 0");
    }
  }
  pt_termv tv;
  if (need_terms(args, &tv) < 0) return NULL;
  hits h = {{NULL, 0, 0}, NULL, 0, 0, limit < 0 ? SIZE_MAX : (size_t)limit, values, 0};
  int st;
  tern_snapshot *snap = self->snap;
  Py_BEGIN_ALLOW_THREADS
  tern_postings *p;
  st = tern_postings_open(&p, snap, tv.terms, (size_t)tv.n);
  if (!st) {
    st = tern_postings_each_by_key(p, values, collect, &h);
    if (st == TERN_ESTOPPED) st = h.why;
    tern_postings_close(p);
  }
  Py_END_ALLOW_THREADS
  pt_termv_free(&tv);
  PyObject *r = st ? pt_raise(st) : hits_list(&h);
  pt_arena_free(&h.arena);
  free(h.v);
  return r;
}

PyObject *pt_snap_count(pt_snapshot *self, PyObject *args) {
  uint64_t n = 0;
  int st;
  if (PyTuple_GET_SIZE(args) == 0) {
    st = tern_snapshot_count(self->snap, &n);
    return st ? pt_raise(st) : PyLong_FromUnsignedLongLong(n);
  }
  pt_termv tv;
  if (pt_termv_get(args, &tv) < 0) return NULL;
  tern_snapshot *snap = self->snap;
  Py_BEGIN_ALLOW_THREADS
  tern_postings *p;
  st = tern_postings_open(&p, snap, tv.terms, (size_t)tv.n);
  if (!st) {
    uint64_t doc;
    while ((st = tern_postings_next(p, &doc)) == TERN_OK && doc != TERN_NO_MORE_DOCS) n++;
    tern_postings_close(p);
  }
  Py_END_ALLOW_THREADS
  pt_termv_free(&tv);
  return st ? pt_raise(st) : PyLong_FromUnsignedLongLong(n);
}
