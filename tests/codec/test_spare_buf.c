/* SPDX-License-Identifier: MIT */
/* Buffers readied ahead of the read that fills them (codec/spare_buf.h):
 * the table against a reference model on random operations, threads, and
 * a segment's open reading its index file into the buffer readied for it
 * — the right answers, a buffer of a stale length refused, damage still
 * TERN_ECORRUPT naming NAME.tix. */
#include "tests/codec/segment_fixture.h"

#include "codec/segment_internal.h"
#include "codec/spare_buf.h"
#include "codec/status.h"
#include "tests/common/seg_lookup.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The reference: what spare_buf.h promises, in the simplest terms — at
 * most SLOTS buffers and MAX bytes, the oldest readied freed first, a
 * take of the wrong length drops the buffer. */
enum { SLOTS = 8, KEYS = 12 };
#define MAX (8u << 20)

typedef struct model {
  int held[KEYS];
  size_t len[KEYS];
  uint64_t age[KEYS], clock;
} model;

static size_t model_bytes(const model *m) {
  size_t n = 0;
  for (int k = 0; k < KEYS; k++) n += m->held[k] ? m->len[k] : 0;
  return n;
}

static int model_count(const model *m) {
  int n = 0;
  for (int k = 0; k < KEYS; k++) n += m->held[k];
  return n;
}

static void model_ready(model *m, int key, size_t len) {
  if (!len || len > MAX) return;
  m->held[key] = 0;
  while (model_count(m) >= SLOTS || model_bytes(m) + len > MAX) {
    int old = -1;
    for (int k = 0; k < KEYS; k++)
      if (m->held[k] && (old < 0 || m->age[k] < m->age[old])) old = k;
    m->held[old] = 0;
  }
  m->held[key] = 1;
  m->len[key] = len;
  m->age[key] = ++m->clock;
}

static int model_take(model *m, int key, size_t len) {
  int hit = m->held[key] && m->len[key] == len;
  m->held[key] = 0;
  return hit;
}

static void key_name(char *out, size_t cap, int key) { snprintf(out, cap, "/spare/key-%d", key); }

static size_t pick_len(tu_rng *r) {
  switch (tu_below(r, 5)) {
  case 0: return (size_t)tu_below(r, 5000);              /* 0 and small */
  case 1: return 4096 * (size_t)(1 + tu_below(r, 64));   /* whole pages */
  case 2: return MAX - (size_t)tu_below(r, 3);           /* at the limit */
  case 3: return MAX + 1 + (size_t)tu_below(r, 4096);    /* over it */
  default: return (size_t)(1 + tu_below(r, 3u << 20)); /* up to 3 MiB */
  }
}

static void test_against_model(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x5bad);
  model m;
  memset(&m, 0, sizeof m);
  tern_spare_clear();
  size_t lens[KEYS] = {0};
  unsigned hits = 0, ops = 3000 * tu_scale();
  for (unsigned i = 0; i < ops; i++) {
    int key = (int)tu_below(&r, KEYS);
    char name[64];
    key_name(name, sizeof name, key);
    if (tu_below(&r, 2)) {
      lens[key] = pick_len(&r);
      tern_spare_ready(name, lens[key]);
      model_ready(&m, key, lens[key]);
      continue;
    }
    /* The length last readied for the key, or another one. */
    size_t len = tu_below(&r, 4) ? lens[key] : lens[key] + 1;
    uint8_t *b = tern_spare_take(name, len);
    int want = model_take(&m, key, len);
    if ((b != NULL) != want)
      fail_msg("op %u: take(%d, %zu) gave %s, the model %s", i, key, len, b ? "a buffer" : "none",
               want ? "a buffer" : "none");
    if (b) { /* the caller's: all of it writable (ASan checks), free()d */
      memset(b, 0xa5, len);
      free(b);
      hits++;
    }
  }
  assert_true(hits > 0);
  tern_spare_clear();
  for (int k = 0; k < KEYS; k++) {
    char name[64];
    key_name(name, sizeof name, k);
    assert_null(tern_spare_take(name, lens[k]));
  }
}

/* Threads readying and taking their own keys and each other's: every
 * buffer handed out once at most (a double hand-out is a double free
 * under ASan, a race under TSan). */
enum { THREADS = 4 };

static void *churn(void *arg) {
  uint64_t id = (uint64_t)(uintptr_t)arg;
  tu_rng r;
  tu_rng_init(&r, 0x7000 + id);
  for (int i = 0; i < 2000; i++) {
    char name[64];
    key_name(name, sizeof name, (int)tu_below(&r, 6));
    size_t len = 4096 * (size_t)(1 + tu_below(&r, 3));
    if (tu_below(&r, 2)) {
      tern_spare_ready(name, len);
    } else {
      uint8_t *b = tern_spare_take(name, len);
      if (b) memset(b, (int)id, len);
      free(b);
    }
  }
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  pthread_t t[THREADS];
  for (uintptr_t i = 0; i < THREADS; i++)
    assert_int_equal(pthread_create(&t[i], NULL, churn, (void *)i), 0);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  tern_spare_clear();
}

/* ------------------------------------------------ a segment's index file */

static void build(tu_rng *r, const char *dir, const char *name, fx_seg *x) {
  memset(x, 0, sizeof *x);
  tern_segw_options_init(&x->o);
  fx_unique(r, &x->fields[0], "id", FX_BASE36, 3000, 1, 0, 8, 1);
  x->nfields = 1;
  x->max_doc = 3000;
  assert_int_equal(fx_write(x, dir, name), TERN_OK);
}

static uint64_t file_size(const char *path) {
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  return (uint64_t)st.st_size;
}

/* Every key of the reference gives its doc and value. */
static void check_all(const char *dir, const char *name, const fx_seg *x, tern_io_mode mode) {
  tern_seg *s;
  assert_int_equal(tern_seg_open(&s, dir, name, mode), TERN_OK);
  tern_seg_cursor *c = malloc(sizeof *c);
  const fx_field *f = &x->fields[0];
  for (uint32_t k = 0; k < f->n; k++) {
    const fx_term *t = &f->terms[k];
    tern_seg_cursor_init(c);
    uint32_t doc;
    tern_slice v;
    assert_int_equal(tu_seg_pk_get(s, t->t, t->len, c, &doc, &v), TERN_OK);
    assert_int_equal(doc, t->docs[0]);
    assert_int_equal(v.len, t->vlen);
    if (v.len) assert_memory_equal(v.data, t->val, v.len);
    tern_seg_cursor_release(c);
  }
  free(c);
  tern_seg_close(s);
}

static void test_segment_open_takes_the_readied_buffer(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x71c5);
  char *dir = tu_tmpdir("spare");
  fx_seg x;
  build(&r, dir, "s1", &x);
  char *tix = fx_file(dir, "s1", ".tix");
  uint64_t size = file_size(tix);
  tern_spare_clear();

  /* Readied at its length: a pread-mode open takes it (none left after)
   * and reads right. */
  assert_int_equal(tern_seg_prefetch(dir, "s1"), size);
  tern_seg_ready_index_buffer(dir, "s1", size);
  check_all(dir, "s1", &x, TERN_IO_PREAD);
  assert_null(tern_spare_take(tix, (size_t)size));

  /* A mapped open uses the file in place: it leaves the buffer. */
  tern_seg_ready_index_buffer(dir, "s1", size);
  check_all(dir, "s1", &x, TERN_IO_MMAP);
  void *left = tern_spare_take(tix, (size_t)size);
  assert_non_null(left);
  free(left);

  /* Readied at a length the file no longer has: refused (and dropped),
   * the open reads into a buffer of its own. */
  tern_seg_ready_index_buffer(dir, "s1", size + 4096);
  check_all(dir, "s1", &x, TERN_IO_PREAD);
  assert_null(tern_spare_take(tix, (size_t)size + 4096));

  /* Damage, read into a readied buffer or mapped: TERN_ECORRUPT naming
   * NAME.tix, every byte of the body in turn (a sample of them). */
  size_t len;
  uint8_t *orig = tu_read_file(tix, &len);
  assert_int_equal(len, size);
  for (int i = 0; i < 40; i++) {
    uint8_t *bad = malloc(len);
    memcpy(bad, orig, len);
    size_t at = (size_t)tu_below(&r, len);
    bad[at] ^= (uint8_t)(1 + tu_below(&r, 255));
    tu_write_file(tix, bad, len);
    tern_seg_ready_index_buffer(dir, "s1", size);
    tern_seg *s = NULL;
    int rc = tern_seg_open(&s, dir, "s1", i & 1 ? TERN_IO_MMAP : TERN_IO_PREAD);
    if (rc != TERN_ECORRUPT && rc != TERN_EVERSION)
      fail_msg("byte %zu flipped: status %d (%s)", at, rc, tern_errmsg());
    assert_non_null(strstr(tern_errmsg(), ".tix"));
    assert_null(s);
    free(bad);
  }
  tu_write_file(tix, orig, len);
  check_all(dir, "s1", &x, TERN_IO_MMAP);
  free(orig);
  tern_spare_clear();

  /* A file that is gone: tern_seg_prefetch says so (0), the open gives its errno. */
  assert_int_equal(unlink(tix), 0);
  assert_int_equal(tern_seg_prefetch(dir, "s1"), 0);
  tern_seg *s = NULL;
  assert_int_equal(tern_seg_open(&s, dir, "s1", TERN_IO_MMAP), -ENOENT);
  assert_non_null(strstr(tern_errmsg(), "s1.tix"));
  free(tix);
  fx_free(&x);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_against_model),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_segment_open_takes_the_readied_buffer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
