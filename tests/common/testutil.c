/* SPDX-License-Identifier: MIT */
#include "tests/common/testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t g_seed;
static int g_seeded;

uint64_t tu_seed(void) {
  if (!g_seeded) {
    const char *env = getenv("TERN_SEED");
    if (env && *env) {
      g_seed = strtoull(env, NULL, 0);
    } else {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      g_seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 20;
    }
    g_seeded = 1;
    fprintf(stderr, "[seed] TERN_SEED=%llu\n", (unsigned long long)g_seed);
  }
  return g_seed;
}

void tu_rng_init(tu_rng *r, uint64_t salt) { r->s = tu_seed() ^ (salt * 0x9E3779B97F4A7C15ull); }

uint64_t tu_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t tu_next(tu_rng *r) { return tu_mix(r->s += 0x9E3779B97F4A7C15ull); }

uint64_t tu_below(tu_rng *r, uint64_t n) { return n ? tu_next(r) % n : 0; }

void tu_fill(tu_rng *r, void *buf, size_t len) {
  uint8_t *p = buf;
  for (size_t i = 0; i < len; i++) p[i] = (uint8_t)tu_next(r);
}

unsigned tu_scale(void) {
  const char *env = getenv("TERN_TEST_SCALE");
  long v = env ? strtol(env, NULL, 10) : 1;
  return v > 0 ? (unsigned)v : 1u;
}

char *tu_path(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  assert_non_null(p);
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

void tu_rmtree(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char *child = tu_path(path, e->d_name);
      struct stat st;
      if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode))
        tu_rmtree(child);
      else
        unlink(child);
      free(child);
    }
    closedir(d);
  }
  rmdir(path);
}

/* Every directory tu_tmpdir made, removed at exit: as many as a test
 * program makes (a CLI test makes two for each command it runs, so a
 * fixed table once left the last tests' directories behind). */
static char **g_dirs;
static size_t g_ndirs, g_capdirs;

static void tu_cleanup(void) {
  int keep = getenv("TERN_KEEP") != NULL;
  for (size_t i = 0; i < g_ndirs; i++) {
    if (!keep) tu_rmtree(g_dirs[i]);
    free(g_dirs[i]);
  }
  free(g_dirs);
  g_dirs = NULL;
  g_ndirs = g_capdirs = 0;
}

static void remember_dir(const char *p) {
  if (g_ndirs == g_capdirs) {
    size_t cap = g_capdirs ? 2 * g_capdirs : 64;
    char **d = realloc(g_dirs, cap * sizeof *d);
    assert_non_null(d);
    g_dirs = d;
    g_capdirs = cap;
  }
  g_dirs[g_ndirs] = strdup(p);
  assert_non_null(g_dirs[g_ndirs]);
  g_ndirs++;
}

char *tu_tmpdir(const char *tag) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  size_t n = strlen(base) + strlen(tag) + 32;
  char *p = malloc(n);
  assert_non_null(p);
  snprintf(p, n, "%s/tern-%s-XXXXXX", base, tag);
  assert_non_null(mkdtemp(p));
  static int registered;
  if (!registered) registered = !atexit(tu_cleanup);
  remember_dir(p);
  return p;
}

uint8_t *tu_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  assert_true(n >= 0);
  rewind(f);
  uint8_t *buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return buf;
}

void tu_write_file(const char *path, const void *buf, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}
