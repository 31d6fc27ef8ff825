/* SPDX-License-Identifier: MIT */
/*
 * queue_spare.h — an index's spare read queue, kept between cold batches.
 *
 * A cold batch reads through a read queue (codec/io.h, tern_rqueue);
 * setting one up costs system calls (io_uring: a ring's setup and mapping,
 * its teardown; threads: their start), about 50 µs on the reference virtual
 * machine: 6% of a cold batch of 100 keys.  The index keeps the last queue
 * given back, idle, for the next taker; a second concurrent taker opens
 * its own.  One slot, swapped atomically: no lock.
 */
#ifndef TERN_ENGINE_READ_QUEUE_SPARE_H
#define TERN_ENGINE_READ_QUEUE_SPARE_H

#include "engine/state/index.h"

#include "codec/io.h"

/* A queue of at least `depth` reads (the spare if it fits, else a new
 * one, the spare closed).  Errors: those of tern_rqueue_open. */
int tern_queue_take(tern_index *idx, unsigned depth, tern_rqueue **q);
/* Gives q back: kept as the spare when idle and the slot is free, else
 * closed (waiting for its reads in flight).  q may be NULL. */
void tern_queue_give(tern_index *idx, tern_rqueue *q);
/* Closes the spare (tern_close). */
void tern_queue_spare_close(tern_index *idx);

#endif
