/* SPDX-License-Identifier: MIT */
/*
 * worker.h — the background worker of a writing process: flushes of the
 * write buffer and merges of segments, run off the commit path.
 *
 * One thread per index, started by the first commit that makes work due,
 * runs one flush or merge at a time (and merges the larger runs of the
 * buffer view, which commits leave to it past TERN_MRUN_MERGE_MAX
 * documents).  It holds the write lock
 * (tern_write_lock_hold) from the commit that gave it work until that work is
 * installed, so no other process commits meanwhile, and the commits of
 * this process go on.  A flush or merge writes its segment outside any
 * lock and installs it as an edit (edit.h) under idx->install_mu, the
 * lock every commit holds from its resolve to its install; what commits
 * did to its inputs meanwhile is carried into the new segment (flush.c,
 * merge.c).  tern_log_and_apply moves idx->cur, so a commit that began on
 * an older state sees idx->cur moved and resolves its keys again (txn.c).
 * The worker only schedules: it calls flush.c and merge.c, which never
 * call back into it.  After its work it lingers, polling for more, until
 * 50 ms pass without a commit; then it merges the buffer's runs into one
 * and sleeps, and the next commit wakes (signals) it to linger again
 * (worker.c).
 *
 * Failures are recorded in health (tern_stats last_error) and reported
 * once, as TERN_EPARTIAL, by the next tern_commit; the work is retried
 * after 1, 2, 4, ... 1024 further commits.  tern_flush, tern_compact and
 * tern_close wait for the worker first (a barrier).
 */
#ifndef TERN_ENGINE_WORKER_H
#define TERN_ENGINE_WORKER_H

#include "engine/state/index.h"

/* The worker's state (no thread yet).  Writable indexes only. */
int tern_worker_new(tern_index *idx);
/* Waits for the worker, stops its thread and frees it (close). */
void tern_worker_free(tern_index *idx);

/* After a commit (write lock held, install_mu not): wakes the worker when
 * work may be due (the buffer past write_buffer_bytes, or segments
 * changed); when the buffer is past TERN_WORKER_BUDGET times
 * write_buffer_bytes, waits for the worker to finish its work (memory and
 * catalog stay bounded when commits outrun flushes).  Returns the status
 * of a background failure not yet reported (0: none), and forgets it. */
#define TERN_WORKER_BUDGET 4
/* Buffer view runs past which the worker merges a group of the older
 * ones (worker.c: merge_window). */
#define TERN_WORKER_RUNS_MAX 12
int tern_worker_after_commit(tern_index *idx, const tern_rec_state *rec, int segments_changed);
/* Waits until the worker has nothing to do (tern_flush, tern_compact) and
 * ends its back-off: the caller does the work itself.  Returns the status
 * of a background failure not yet reported (0: none), which the caller
 * hands to tern_worker_report. */
int tern_worker_drain(tern_index *idx);
/* What tern_flush or tern_compact returns after its own work ended with
 * `rc`, when drain returned `pending`: a failure of the background worker
 * is reported once, as TERN_EPARTIAL (tern.h), by the first of commit,
 * flush and compact after it; when the caller's own work failed, its
 * error is returned and the pending failure kept for the next call. */
int tern_worker_report(tern_index *idx, int rc, int pending);
/* Wakes the worker thread after work done outside it (tern_flush: the
 * combined filter its flush dropped, combined.h); nothing in the
 * foreground (TERN_FOREGROUND: no thread, and no such work inside a
 * call).  REQUIRES: the write lock held. */
void tern_worker_nudge(tern_index *idx);
/* Waits until the worker has nothing to do, and forgets nothing (verify). */
void tern_worker_wait(tern_index *idx);

#endif
