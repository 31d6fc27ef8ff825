/* SPDX-License-Identifier: MIT */
/*
 * errors.c — tern statuses as Python exceptions: tern.Error and one
 * subclass per status, each carrying .status, .errmsg (tern_errmsg() of the
 * failed call) and a message "strerror: errmsg".
 */
#include "pytern.h"

#include <errno.h>
#include <string.h>

typedef struct pt_exc_def {
  int status;          /* 0: the errno class, 1: the closed-handle class */
  const char *name;    /* tern.NAME */
  PyObject **extra;    /* a builtin base besides tern.Error, or NULL */
  const char *doc;
  PyObject *type;
} pt_exc_def;

static PyObject *g_error;
static PyObject *g_invalid;

static pt_exc_def g_excs[] = {
    {TERN_NOTFOUND, "NotFoundError", &PyExc_KeyError,
     "TERN_NOTFOUND: the key is absent (raised by Index[key] and Snapshot[key]; get() "
     "returns None instead).",
     NULL},
    {TERN_EINVAL, "InvalidError", &PyExc_ValueError,
     "TERN_EINVAL: an invalid argument (an empty or too long key, a bad field or term, "
     "a write on a read-only index, ...).",
     NULL},
    {TERN_ECORRUPT, "CorruptError", NULL,
     "TERN_ECORRUPT: a file is corrupt, truncated or foreign; the message names it.", NULL},
    {TERN_EVERSION, "VersionError", NULL,
     "TERN_EVERSION: a file of a format version this library does not read.", NULL},
    {TERN_EBUSY, "BusyError", NULL,
     "TERN_EBUSY: another write transaction is open (waited for up to busy_timeout_ms, "
     "0 by default), or a "
     "handle is still in use (close() with snapshots, transactions or iterators open, "
     "or calls running in other threads).",
     NULL},
    {TERN_ENOMEM, "NoMemoryError", &PyExc_MemoryError, "TERN_ENOMEM: out of memory.", NULL},
    {TERN_ERANGE, "RangeError", NULL, "TERN_ERANGE: a buffer was too small (internal).", NULL},
    {TERN_ENOTINDEX, "NotIndexError", NULL,
     "TERN_ENOTINDEX: the directory is not a tern index (open it with create=True to "
     "make one in an absent or empty directory).",
     NULL},
    {TERN_EFULL, "FullError", NULL,
     "TERN_EFULL: the catalog's map is full: reopen with a larger map_size, or flush().",
     NULL},
    {TERN_EPARTIAL, "PartialError", NULL,
     "TERN_EPARTIAL: the commit (or flush) is durable and visible, but work run after "
     "it (a flush or merge) failed; nothing is lost, the next writer tries again.",
     NULL},
    {TERN_EEXIST, "ExistsError", NULL,
     "TERN_EEXIST: the key exists (Txn.put with no_overwrite=True).", NULL},
    {TERN_ESTOPPED, "StoppedError", NULL,
     "TERN_ESTOPPED: a callback stopped a walk (internal: the package's callbacks stop "
     "only on a limit, which is not an error).",
     NULL},
    {0, "OSError", &PyExc_OSError,
     "A negated errno from the system (-ENOENT, -EACCES, -ENOSPC, -EIO, ...): also a "
     "builtin OSError, with .errno set; .status is the negative value tern returned.",
     NULL},
    {1, "ClosedError", NULL,
     "A handle used after close() (or a transaction after its commit or abort); also an "
     "InvalidError (ValueError), .status TERN_EINVAL.",
     NULL},
};
#define NEXCS (sizeof g_excs / sizeof g_excs[0])

static PyObject *class_for(int status) {
  for (size_t i = 0; i < NEXCS; i++)
    if (g_excs[i].status == status && status < 0) return g_excs[i].type;
  if (status < 0 && status > -30700) return g_excs[NEXCS - 2].type; /* errno */
  return g_error;
}

static PyObject *build(PyObject *cls, int status, const char *errmsg, const char *text) {
  PyObject *exc;
  if (cls == g_excs[NEXCS - 2].type)
    exc = PyObject_CallFunction(cls, "is", -status, text);
  else
    exc = PyObject_CallFunction(cls, "s", text);
  if (!exc) return NULL;
  PyObject *st = PyLong_FromLong(status);
  PyObject *em = PyUnicode_DecodeUTF8(errmsg, (Py_ssize_t)strlen(errmsg), "backslashreplace");
  if (!st || !em || PyObject_SetAttrString(exc, "status", st) < 0 ||
      PyObject_SetAttrString(exc, "errmsg", em) < 0) {
    Py_XDECREF(st);
    Py_XDECREF(em);
    Py_DECREF(exc);
    return NULL;
  }
  Py_DECREF(st);
  Py_DECREF(em);
  return exc;
}

/* str(exc): "strerror: errmsg" for the library's failures, the binding's
 * own message alone (own != 0) for misuse it detects. */
static PyObject *raise_with(PyObject *cls, int status, const char *errmsg, int own) {
  const char *s = own ? "" : tern_strerror(status);
  size_t n = strlen(s) + strlen(errmsg) + 3;
  char *text = PyMem_Malloc(n);
  if (!text) return PyErr_NoMemory();
  if (own)
    snprintf(text, n, "%s", errmsg);
  else if (*errmsg)
    snprintf(text, n, "%s: %s", s, errmsg);
  else
    snprintf(text, n, "%s", s);
  PyObject *exc = build(cls, status, errmsg, text);
  PyMem_Free(text);
  if (exc) {
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
  return NULL;
}

PyObject *pt_raise(int status) {
  return raise_with(class_for(status), status, tern_errmsg(), 0);
}

PyObject *pt_raise_msg(int status, const char *msg) {
  PyObject *cls = status == 1 ? g_excs[NEXCS - 1].type : class_for(status);
  return raise_with(cls, status == 1 ? TERN_EINVAL : status, msg, 1);
}

PyObject *pt_raise_notfound(PyObject *key) {
  PyObject *exc = PyObject_CallOneArg(g_excs[0].type, key);
  if (!exc) return NULL;
  PyObject *st = PyLong_FromLong(TERN_NOTFOUND);
  if (st && PyObject_SetAttrString(exc, "status", st) == 0 &&
      PyObject_SetAttrString(exc, "errmsg", Py_None) == 0)
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
  Py_XDECREF(st);
  Py_DECREF(exc);
  return NULL;
}

static int add_status_constants(PyObject *m) {
  static const struct { const char *n; int v; } c[] = {
      {"OK", TERN_OK},           {"NOTFOUND", TERN_NOTFOUND}, {"EINVAL", TERN_EINVAL},
      {"ECORRUPT", TERN_ECORRUPT}, {"EVERSION", TERN_EVERSION}, {"EBUSY", TERN_EBUSY},
      {"ENOMEM", TERN_ENOMEM},   {"ERANGE", TERN_ERANGE},     {"ENOTINDEX", TERN_ENOTINDEX},
      {"EFULL", TERN_EFULL},     {"EPARTIAL", TERN_EPARTIAL}, {"EEXIST", TERN_EEXIST},
      {"ESTOPPED", TERN_ESTOPPED}, {"KEY_MAX", TERN_KEY_MAX},
      {"FIELD_MAX", TERN_FIELD_MAX}, {"VALUE_MAX", TERN_VALUE_MAX},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    if (PyModule_AddIntConstant(m, c[i].n, c[i].v) < 0) return -1;
  return 0;
}

int pt_errors_init(PyObject *m) {
  g_error = PyErr_NewExceptionWithDoc(
      "tern.Error",
      "Base class of every error tern raises.  .status is the tern status (a TERN_E... "
      "code, or a negated errno), .errmsg the detailed message of the failed call "
      "(tern_errmsg(): which file, which check; may be empty); str() joins "
      "tern_strerror(status) and errmsg.",
      PyExc_Exception, NULL);
  if (!g_error || PyModule_AddObjectRef(m, "Error", g_error) < 0) return -1;
  for (size_t i = 0; i < NEXCS; i++) {
    PyObject *base = g_error;
    if (g_excs[i].status == 1) base = g_invalid;
    PyObject *bases = g_excs[i].extra ? PyTuple_Pack(2, base, *g_excs[i].extra)
                                      : PyTuple_Pack(1, base);
    if (!bases) return -1;
    char qual[64];
    snprintf(qual, sizeof qual, "tern.%s", g_excs[i].name);
    g_excs[i].type = PyErr_NewExceptionWithDoc(qual, g_excs[i].doc, bases, NULL);
    Py_DECREF(bases);
    if (!g_excs[i].type || PyModule_AddObjectRef(m, g_excs[i].name, g_excs[i].type) < 0)
      return -1;
    if (g_excs[i].status == TERN_EINVAL) g_invalid = g_excs[i].type;
  }
  return add_status_constants(m);
}
