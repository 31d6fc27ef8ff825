/* SPDX-License-Identifier: MIT */
/*
 * batch_load.h — a cold batch that needs most of its segments' files reads
 * them whole, in order, first (batch_load.c).
 */
#ifndef TERN_ENGINE_READ_BATCH_LOAD_H
#define TERN_ENGINE_READ_BATCH_LOAD_H

#include "engine/state/index.h"

#include <stddef.h>

/* For a batch of n keys on snapshot s that is not answered in order
 * already: when every segment is mapped and the batch has at least a key
 * per block of all the segments' terms together (and per page of their
 * values), and
 * the files fit in a quarter of the machine's memory, the files not
 * checked yet are read whole, in order, through the read queue
 * (tern_rfile_load, read_depth), and the batch can go in order, each key
 * answered at once from the page cache.  1: loaded (go in order); 0: not
 * worth it (sort and read the blocks needed); < 0: a read failed (its
 * error, the file named). */
int tern_batch_load(tern_snapshot *s, size_t n);

#endif
