/* SPDX-License-Identifier: MIT */
/*
 * replay.c — the driver that runs a fuzz target without libFuzzer (gcc
 * builds, ctest): each argument is a file or a directory of files, fed to
 * fuzz_check one by one.  Options, before the paths they apply to:
 *   --accept   every input must decode (TERN_OK): the valid golden files
 *   --reject   every input must be refused with an error: the must-reject ones
 *   --any      no expectation (the corpus): only that nothing crashes
 * Exits 1 naming the first file that breaks its expectation.
 */
#include "tern.h"
#include "tests/fuzz/fuzz.h"

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

enum expect { ANY, ACCEPT, REJECT };

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
  if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *len = n > 0 ? (size_t)n : 0;
  return b;
}

static int run_file(const char *path, enum expect e, unsigned *count) {
  size_t len;
  uint8_t *b = slurp(path, &len);
  if (!b) {
    fprintf(stderr, "%s: cannot read\n", path);
    return 1;
  }
  int rc = fuzz_check(b, len);
  free(b);
  (*count)++;
  if ((e == ACCEPT && rc != TERN_OK) || (e == REJECT && rc == TERN_OK)) {
    fprintf(stderr, "%s: %s, status %d %s\n", path, e == ACCEPT ? "must decode" : "must be refused",
            rc, tern_errmsg());
    return 1;
  }
  return 0;
}

static int run_path(const char *path, enum expect e, unsigned *count) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "%s: missing\n", path);
    return 1;
  }
  if (!S_ISDIR(st.st_mode)) return run_file(path, e, count);
  DIR *d = opendir(path);
  if (!d) return 1;
  struct dirent *de;
  int bad = 0;
  while (!bad && (de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
    bad = run_path(sub, e, count);
  }
  closedir(d);
  return bad;
}

int main(int argc, char **argv) {
  enum expect e = ANY;
  unsigned count = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--accept")) e = ACCEPT;
    else if (!strcmp(argv[i], "--reject")) e = REJECT;
    else if (!strcmp(argv[i], "--any")) e = ANY;
    else if (run_path(argv[i], e, &count)) return 1;
  }
  printf("%u inputs replayed\n", count);
  return 0;
}
