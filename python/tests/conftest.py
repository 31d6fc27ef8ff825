# SPDX-License-Identifier: MIT
"""Shared fixtures of the tern pytest suite: a fresh index directory per
test and a seeded random generator whose seed is printed (TERN_SEED=N
replays a run)."""
import os
import random
import time

import pytest


@pytest.fixture
def seed():
    s = int(os.environ.get("TERN_SEED", time.time_ns() % (1 << 31)))
    print(f"seed={s} (TERN_SEED={s} replays it)")
    return s


@pytest.fixture
def rng(seed):
    return random.Random(seed)


@pytest.fixture
def idxdir(tmp_path):
    return str(tmp_path / "idx")
