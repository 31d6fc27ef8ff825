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
