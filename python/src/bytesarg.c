/* SPDX-License-Identifier: MIT */
/*
 * bytesarg.c — keys, values and terms from Python objects (bytes without a
 * copy, str as its UTF-8, any buffer), and the arena that collects results
 * while the GIL is released.
 */
#include "pytern.h"

#include <stdlib.h>
#include <string.h>

int pt_bytes_get(PyObject *obj, pt_bytes *out, const char *what) {
  out->has_view = 0;
  if (PyBytes_Check(obj)) {
    out->data = PyBytes_AS_STRING(obj);
    out->len = PyBytes_GET_SIZE(obj);
    return 0;
  }
  if (PyUnicode_Check(obj)) {
    out->data = PyUnicode_AsUTF8AndSize(obj, &out->len);
    return out->data ? 0 : -1;
  }
  if (PyObject_CheckBuffer(obj)) {
    if (PyObject_GetBuffer(obj, &out->view, PyBUF_SIMPLE) < 0) return -1;
    out->has_view = 1;
    out->data = out->view.buf;
    out->len = out->view.len;
    return 0;
  }
  PyErr_Format(PyExc_TypeError, "%s must be bytes, str or a bytes-like object, not %.100s",
               what, Py_TYPE(obj)->tp_name);
  return -1;
}

void pt_bytes_release(pt_bytes *b) {
  if (b->has_view) PyBuffer_Release(&b->view);
  b->has_view = 0;
}

int pt_arena_put(pt_arena *a, const void *p, size_t n, size_t *off) {
  if (a->cap - a->len < n) {
    size_t cap = a->cap ? a->cap : 4096;
    while (cap - a->len < n) cap *= 2;
    char *nb = realloc(a->buf, cap);
    if (!nb) return -1;
    a->buf = nb;
    a->cap = cap;
  }
  if (n && p) memcpy(a->buf + a->len, p, n); /* p NULL: room reserved, filled by the caller */
  *off = a->len;
  a->len += n;
  return 0;
}

void pt_arena_free(pt_arena *a) {
  free(a->buf);
  a->buf = NULL;
  a->len = a->cap = 0;
}

int pt_values_init(pt_values *v, size_t n) {
  v->arena = (pt_arena){NULL, 0, 0};
  v->recs = PyMem_Calloc(n + 1, sizeof *v->recs);
  if (!v->recs) PyErr_NoMemory();
  return v->recs ? 0 : -1;
}

int pt_values_set(pt_values *v, size_t i, int status, const void *val, size_t vlen) {
  pt_valrec *r = &v->recs[i];
  if (status != TERN_OK) {
    r->len = SIZE_MAX;
    return 0;
  }
  r->len = vlen;
  return pt_arena_put(&v->arena, val, vlen, &r->off) ? 1 : 0;
}

PyObject *pt_values_list(const pt_values *v, size_t n) {
  PyObject *list = PyList_New((Py_ssize_t)n);
  if (!list) return NULL;
  for (size_t i = 0; i < n; i++) {
    const pt_valrec *r = &v->recs[i];
    PyObject *o = r->len == SIZE_MAX
                      ? Py_NewRef(Py_None)
                      : PyBytes_FromStringAndSize(v->arena.buf + r->off, (Py_ssize_t)r->len);
    if (!o) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, o);
  }
  return list;
}

void pt_values_free(pt_values *v) {
  pt_arena_free(&v->arena);
  PyMem_Free(v->recs);
  v->recs = NULL;
}
