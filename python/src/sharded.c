/* SPDX-License-Identifier: MIT */
/*
 * sharded.c — the shard router's get_many (tern.shards.Router.get_many) in
 * C: each key routed to its shard by a binary search of the boundaries,
 * one tern_get_batch per shard, all without the GIL, answers in the order
 * asked.  In Python the routing alone cost half of a batch lookup.
 */
#include "pytern.h"

#include <stdlib.h>
#include <string.h>

static int cmp_bytes(const void *a, size_t alen, const void *b, size_t blen) {
  int c = memcmp(a, b, alen < blen ? alen : blen);
  if (c) return c;
  return alen < blen ? -1 : alen > blen;
}

/* The shard of a key: the number of boundaries <= key. */
static size_t shard_of(const pt_bytes *bounds, size_t nb, const char *k, size_t klen) {
  size_t lo = 0, hi = nb;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_bytes(bounds[mid].data, (size_t)bounds[mid].len, k, klen) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

typedef struct sh_ctx {
  pt_values vals;    /* per key asked, by position */
  const size_t *pos; /* this shard's keys' positions */
} sh_ctx;

static int sh_cb(void *payload, size_t i, int status, const void *val, size_t vlen) {
  sh_ctx *c = payload;
  return pt_values_set(&c->vals, c->pos[i], status, val, vlen); /* 1: out of memory, stop */
}

typedef struct sh_args {
  PyObject *idx_seq, *b_seq, *k_seq;
  Py_ssize_t ns, nb, n;
  pt_bytes *bounds, *keys;
  Py_ssize_t got_b, got_k;
  tern_slice *sl;
  size_t *pos, *cnt, *off;
  unsigned char *mark; /* indexes whose in-flight count we raised */
} sh_args;

static void sh_free(sh_args *a) {
  for (Py_ssize_t i = 0; i < a->got_b; i++) pt_bytes_release(&a->bounds[i]);
  for (Py_ssize_t i = 0; i < a->got_k; i++) pt_bytes_release(&a->keys[i]);
  PyMem_Free(a->bounds);
  PyMem_Free(a->keys);
  PyMem_Free(a->sl);
  PyMem_Free(a->pos);
  PyMem_Free(a->cnt);
  PyMem_Free(a->off);
  Py_XDECREF(a->idx_seq);
  Py_XDECREF(a->b_seq);
  Py_XDECREF(a->k_seq);
}

/* Routes the keys: slices grouped by shard (sl, off, cnt), pos[j] the
 * position asked of the j-th grouped key. */
static int sh_route(sh_args *a) {
  size_t *which = PyMem_Malloc(((size_t)a->n + 1) * sizeof *which);
  if (!which) return PyErr_NoMemory(), -1;
  for (Py_ssize_t i = 0; i < a->n; i++) {
    which[i] = shard_of(a->bounds, (size_t)a->nb, a->keys[i].data, (size_t)a->keys[i].len);
    a->cnt[which[i]]++;
  }
  for (Py_ssize_t s = 1; s < a->ns; s++) a->off[s] = a->off[s - 1] + a->cnt[s - 1];
  size_t *fill = PyMem_Calloc((size_t)a->ns, sizeof *fill);
  if (!fill) {
    PyMem_Free(which);
    return PyErr_NoMemory(), -1;
  }
  for (Py_ssize_t i = 0; i < a->n; i++) {
    size_t j = a->off[which[i]] + fill[which[i]]++;
    a->sl[j].data = a->keys[i].data;
    a->sl[j].len = (size_t)a->keys[i].len;
    a->pos[j] = (size_t)i;
  }
  PyMem_Free(fill);
  PyMem_Free(which);
  return 0;
}

static int sh_convert(sh_args *a, PyObject *indexes, PyObject *bounds, PyObject *keys) {
  if (!(a->idx_seq = PySequence_Fast(indexes, "indexes must be a sequence")) ||
      !(a->b_seq = PySequence_Fast(bounds, "boundaries must be a sequence")) ||
      !(a->k_seq = PySequence_Fast(keys, "get_many() takes an iterable of keys")))
    return -1;
  a->ns = PySequence_Fast_GET_SIZE(a->idx_seq);
  a->nb = PySequence_Fast_GET_SIZE(a->b_seq);
  a->n = PySequence_Fast_GET_SIZE(a->k_seq);
  if (a->ns < 1 || a->nb != a->ns - 1) {
    pt_raise_msg(TERN_EINVAL, "a shard map needs one more index than boundaries");
    return -1;
  }
  for (Py_ssize_t s = 0; s < a->ns; s++) {
    PyObject *o = PySequence_Fast_GET_ITEM(a->idx_seq, s);
    if (!PyObject_TypeCheck(o, &pt_index_type)) {
      PyErr_SetString(PyExc_TypeError, "indexes must be tern.Index objects");
      return -1;
    }
    if (pt_index_check((pt_index *)o) < 0) return -1;
  }
  size_t n1 = (size_t)a->n + 1, s1 = (size_t)a->ns + 1;
  a->bounds = PyMem_Calloc(s1, sizeof *a->bounds);
  a->keys = PyMem_Calloc(n1, sizeof *a->keys);
  a->sl = PyMem_Calloc(n1, sizeof *a->sl);
  a->pos = PyMem_Calloc(n1, sizeof *a->pos);
  a->cnt = PyMem_Calloc(s1, sizeof *a->cnt);
  a->off = PyMem_Calloc(s1, sizeof *a->off);
  if (!a->bounds || !a->keys || !a->sl || !a->pos || !a->cnt || !a->off)
    return PyErr_NoMemory(), -1;
  for (; a->got_b < a->nb; a->got_b++)
    if (pt_bytes_get(PySequence_Fast_GET_ITEM(a->b_seq, a->got_b), &a->bounds[a->got_b],
                     "boundary") < 0)
      return -1;
  for (; a->got_k < a->n; a->got_k++)
    if (pt_bytes_get(PySequence_Fast_GET_ITEM(a->k_seq, a->got_k), &a->keys[a->got_k], "key") <
        0)
      return -1;
  return 0;
}

PyObject *pt_get_many_sharded(PyObject *m, PyObject *args) {
  (void)m;
  PyObject *indexes, *bounds, *keys;
  if (!PyArg_ParseTuple(args, "OOO", &indexes, &bounds, &keys)) return NULL;
  sh_args a;
  memset(&a, 0, sizeof a);
  sh_ctx c = {{{NULL, 0, 0}, NULL}, NULL};
  PyObject *r = NULL;
  if (sh_convert(&a, indexes, bounds, keys) < 0 || sh_route(&a) < 0) goto out;
  if (pt_values_init(&c.vals, (size_t)a.n) < 0) goto out;
  tern_index **ix = PyMem_Calloc((size_t)a.ns, sizeof *ix);
  if (!ix) {
    PyErr_NoMemory();
    goto out;
  }
  for (Py_ssize_t s = 0; s < a.ns; s++) {
    pt_index *pi = (pt_index *)PySequence_Fast_GET_ITEM(a.idx_seq, s);
    pi->inflight++;
    ix[s] = pi->idx;
  }
  int st = 0;
  Py_BEGIN_ALLOW_THREADS
  for (Py_ssize_t s = 0; s < a.ns && !st; s++) {
    if (!a.cnt[s]) continue;
    tern_snapshot *snap;
    st = tern_snapshot_open(&snap, ix[s]);
    if (st) break;
    c.pos = a.pos + a.off[s];
    st = tern_get_batch(snap, a.sl + a.off[s], a.cnt[s], sh_cb, &c);
    if (st == TERN_ESTOPPED) st = TERN_ENOMEM; /* the callback stops only when out of memory */
    tern_snapshot_close(snap);
  }
  Py_END_ALLOW_THREADS
  for (Py_ssize_t s = 0; s < a.ns; s++)
    ((pt_index *)PySequence_Fast_GET_ITEM(a.idx_seq, s))->inflight--;
  PyMem_Free(ix);
  r = st ? pt_raise(st) : pt_values_list(&c.vals, (size_t)a.n);
out:
  pt_values_free(&c.vals);
  sh_free(&a);
  return r;
}
