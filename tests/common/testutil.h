/* SPDX-License-Identifier: MIT */
/*
 * testutil.h — what every cmocka test of tern shares: a seeded random
 * generator whose seed is printed (and taken from TERN_SEED when set, to
 * replay a failure), scratch directories removed at exit, and a scale
 * factor (TERN_TEST_SCALE) for running the random tests longer by hand.
 */
#ifndef TERN_TESTUTIL_H
#define TERN_TESTUTIL_H

#include <setjmp.h> /* cmocka needs these before its header */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* Built with AddressSanitizer (TU_ASAN) or ThreadSanitizer (TU_TSAN):
 * their shadow memory changes page faults and resident bytes, and makes
 * everything slower, so tests of those figures skip and the largest
 * inputs shrink. */
#if defined(__SANITIZE_ADDRESS__)
#define TU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TU_ASAN 1
#endif
#endif
#ifndef TU_ASAN
#define TU_ASAN 0
#endif
#if defined(__SANITIZE_THREAD__)
#define TU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TU_TSAN 1
#endif
#endif
#ifndef TU_TSAN
#define TU_TSAN 0
#endif

/* The seed of this test run: TERN_SEED or the clock; printed once. */
uint64_t tu_seed(void);
/* A splitmix64 stream; seed it with tu_seed() ^ a per-test constant. */
typedef struct tu_rng {
  uint64_t s;
} tu_rng;
void tu_rng_init(tu_rng *r, uint64_t salt);
uint64_t tu_next(tu_rng *r);
/* splitmix64's finalizer: a fixed, well-mixed function of z. */
uint64_t tu_mix(uint64_t z);
/* Uniform in [0, n), n > 0. */
uint64_t tu_below(tu_rng *r, uint64_t n);
void tu_fill(tu_rng *r, void *buf, size_t len);

/* A fresh empty directory under $TMPDIR, removed (recursively) at exit
 * unless TERN_KEEP is set.  Returns a malloc'd path. */
char *tu_tmpdir(const char *tag);
/* "dir/name" in a malloc'd string. */
char *tu_path(const char *dir, const char *name);
/* Removes a directory tree. */
void tu_rmtree(const char *path);
/* TERN_TEST_SCALE (default 1): multiply iteration counts by it. */
unsigned tu_scale(void);

/* Reads / writes a whole file (malloc'd buffer); aborts the test on failure. */
uint8_t *tu_read_file(const char *path, size_t *len);
void tu_write_file(const char *path, const void *buf, size_t len);

#endif
