/* SPDX-License-Identifier: MIT */
/*
 * combined.h — the combined filter (engine/state/state_cfilter.c) kept in
 * the states a writing process installs, by its background worker.
 */
#ifndef TERN_ENGINE_COMBINED_H
#define TERN_ENGINE_COMBINED_H

#include "engine/state/index.h"

/* When the current state probes enough slots in turn for a combined
 * filter and has none (its flushes, merges and ingests make states
 * without one), makes one from that state outside any lock, then, under
 * install_mu, installs the current state with it
 * (tern_state_install_cfilter), if that state still probes slots it
 * covers (else it is dropped: the next run makes another).  Never on a commit's path: the worker thread
 * only, once its flushes and merges are done.  A filter that cannot be
 * made (memory, a damaged terms block, keys not in memory) is no error:
 * gets are right without it; nor is one given up because *interrupt
 * (NULL: none) was set while it was made (a kick: the worker's next idle
 * run makes it).  Errors: those of reading the current state
 * (tern_state_acquire). */
int tern_cfilter_refresh(tern_index *idx, const atomic_int *interrupt);

#endif
