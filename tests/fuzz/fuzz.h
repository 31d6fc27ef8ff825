/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h — libFuzzer targets over tern's decoders and the validators behind
 * their checksums (tests/fuzz/README.md).  Each target file defines
 * fuzz_<name>(data, size), which decodes the bytes, exercises what it
 * accepted and returns TERN_OK or the decoder's error; an accepted input
 * that then misbehaves (a round trip that differs, an iterator that
 * disagrees with the check) aborts.  Framed formats are framed by the
 * target, with a valid checksum, so the fuzzer's bytes reach the
 * structural checks behind the checksum.
 *
 * Built with -DFUZZ_ENTRY, a target also defines LLVMFuzzerTestOneInput
 * (clang -fsanitize=fuzzer) and fuzz_check, which replay.c calls.
 */
#ifndef TERN_FUZZ_H
#define TERN_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int fuzz_check(const uint8_t *data, size_t size);

int fuzz_terms_block(const uint8_t *data, size_t size);
int fuzz_tix(const uint8_t *data, size_t size);
int fuzz_flt(const uint8_t *data, size_t size);
int fuzz_liv(const uint8_t *data, size_t size);
int fuzz_postings(const uint8_t *data, size_t size);
int fuzz_record(const uint8_t *data, size_t size);

/* An accepted input did something it must not: stop the fuzzer here. */
#define FUZZ_ASSERT(x)                                                                             \
  do {                                                                                             \
    if (!(x)) {                                                                                    \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #x);                                      \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

#ifdef FUZZ_ENTRY
#define FUZZ_DEFINE_ENTRY(fn)                                                                      \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {                                   \
    (void)fn(data, size);                                                                          \
    return 0;                                                                                      \
  }                                                                                                \
  int fuzz_check(const uint8_t *data, size_t size) { return fn(data, size); }
#else
#define FUZZ_DEFINE_ENTRY(fn)
#endif

/* The segment id every framed fuzz input is checked against. */
static const uint8_t fuzz_segid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

#endif
