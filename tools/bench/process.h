/* SPDX-License-Identifier: MIT */
/*
 * process.h — running the tools as fresh processes (tools/bench/whole.c),
 * for the whole-process benchmarks (`whole`, `open`).
 */
#ifndef TERN_BENCH_PROCESS_H
#define TERN_BENCH_PROCESS_H

#include <stddef.h>

/* Runs argv with stdin from `in`, stdout to `out`, stderr discarded; the
 * wall time in *s and the exit status, or -1. */
int bench_run_process(char *const *argv, const char *in, const char *out, double *s);
/* The same, and *read_bytes: what the process read from storage (its
 * rusage's blocks in). */
int bench_run_process_io(char *const *argv, const char *in, const char *out, double *s,
                         double *read_bytes);
/* This executable's path into buf[cap] (to run itself as a fresh
 * process): 0, or -1 when it cannot be read. */
int bench_self_exe(char *buf, size_t cap);
/* The path of the tern tool next to this executable into buf[cap]. */
void bench_default_tern(char *buf, size_t cap);

#endif
