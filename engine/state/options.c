/* SPDX-License-Identifier: MIT */
/*
 * options.c — tern_options: their defaults (tern_options_init), the check
 * of a caller's options before an index is created with them, and the
 * copy an open index keeps of those its catalog records (options.h).
 */
#include "engine/state/options.h"

#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

int tern_options_init(tern_options *opts) {
  tern_clear_error();
  if (!opts) return tern_fail(TERN_EINVAL, "tern_options_init: NULL options");
  memset(opts, 0, sizeof *opts);
  opts->version = TERN_OPTIONS_VERSION;
  opts->pulsing_threshold = 1;
  opts->inline_value_max = 128; /* docs/BENCHMARKS.md, "Inline limit" */
  opts->bloom_bits_per_key = 10;
  opts->write_buffer_bytes = 8u << 20;
  opts->map_size = (uint64_t)64 << 30;
  opts->read_depth = TERN_READ_DEPTH_DEFAULT;
  opts->merge_factor = TERN_MERGE_FACTOR_DEFAULT;
  return TERN_OK;
}

static int valid_field_name(const char *f) {
  if (!f) return 0;
  size_t n = strnlen(f, TERN_FIELD_MAX + 1);
  return n >= 1 && n <= TERN_FIELD_MAX;
}

int tern_options_check_merge_factor(uint32_t factor) {
  if (factor == 1 || factor > TERN_MERGE_FACTOR_MAX)
    return tern_fail(TERN_EINVAL, "merge_factor %u: 0 or 2 to %u", factor, TERN_MERGE_FACTOR_MAX);
  return TERN_OK;
}

int tern_options_check(const tern_options *o) {
  if (o->version < 1 || o->version > TERN_OPTIONS_VERSION)
    return tern_fail(TERN_EINVAL, "options version %d, expected 1 to %d", o->version,
                     TERN_OPTIONS_VERSION);
  if (o->pulsing_threshold > TERN_THRESHOLD_MAX)
    return tern_fail(TERN_EINVAL, "pulsing_threshold %u > %u", o->pulsing_threshold,
                     TERN_THRESHOLD_MAX);
  if (o->inline_value_max > TERN_INLINE_MAX)
    return tern_fail(TERN_EINVAL, "inline_value_max %u > %u", o->inline_value_max, TERN_INLINE_MAX);
  if (o->bloom_bits_per_key > 64)
    return tern_fail(TERN_EINVAL, "bloom_bits_per_key %u > 64", o->bloom_bits_per_key);
  if (o->write_buffer_bytes == 0) return tern_fail(TERN_EINVAL, "write_buffer_bytes is 0");
  if (o->map_size < (1u << 20)) return tern_fail(TERN_EINVAL, "map_size below 1 MiB");
  if (o->nfields && !o->fields) return tern_fail(TERN_EINVAL, "nfields without fields");
  if (o->version >= 2 && o->read_depth > TERN_READ_DEPTH_MAX)
    return tern_fail(TERN_EINVAL, "read_depth %u > %u", o->read_depth, TERN_READ_DEPTH_MAX);
  if (o->version >= 3) TERN_TRY(tern_options_check_merge_factor(o->merge_factor));
  if (o->nfields > 4096) return tern_fail(TERN_EINVAL, "%zu field options", o->nfields);
  for (size_t i = 0; i < o->nfields; i++) {
    if (!valid_field_name(o->fields[i].field))
      return tern_fail(TERN_EINVAL, "field option %zu: bad field name", i);
    if (o->fields[i].threshold > TERN_THRESHOLD_MAX)
      return tern_fail(TERN_EINVAL, "field %s: threshold %u > %u", o->fields[i].field,
                       o->fields[i].threshold, TERN_THRESHOLD_MAX);
    for (size_t j = 0; j < i; j++)
      if (!strcmp(o->fields[i].field, o->fields[j].field))
        return tern_fail(TERN_EINVAL, "field %s given twice", o->fields[i].field);
  }
  return TERN_OK;
}

int tern_options_adopt(tern_index *idx, const tern_rec_options *r) {
  tern_options *o = &idx->opts;
  tern_options_init(o);
  o->pulsing_threshold = r->pulsing_threshold;
  o->inline_value_max = r->inline_value_max;
  o->bloom_bits_per_key = r->bloom_bits_per_key;
  o->write_buffer_bytes = r->write_buffer_bytes;
  o->map_size = r->map_size;
  if (r->nfields) {
    tern_field_option *f = calloc(r->nfields, sizeof *f);
    if (!f) return tern_fail(TERN_ENOMEM, "options: out of memory");
    o->fields = f;
    for (size_t i = 0; i < r->nfields; i++) {
      char *name = malloc(r->fields[i].name_len + 1);
      if (!name) return tern_fail(TERN_ENOMEM, "options: out of memory");
      memcpy(name, r->fields[i].name, r->fields[i].name_len);
      name[r->fields[i].name_len] = 0;
      f[i].field = name;
      f[i].threshold = r->fields[i].threshold;
      o->nfields = i + 1;
    }
  }
  if (o->pulsing_threshold > TERN_THRESHOLD_MAX || o->inline_value_max > TERN_INLINE_MAX ||
      o->write_buffer_bytes == 0)
    return tern_fail(TERN_ECORRUPT, "%s/%s: options record out of range", idx->dir,
                     TERN_CATALOG_FILE);
  return TERN_OK;
}

void tern_options_release(tern_options *o) {
  for (size_t i = 0; i < o->nfields; i++)
    free((char *)o->fields[i].field);
  free((void *)o->fields);
  o->fields = NULL;
  o->nfields = 0;
}
