# SPDX-License-Identifier: MIT
"""A worker process killed in the middle of tern.dask.build_index: Dask
retries its tasks on the other worker (and the nanny's restarted one), the
killed task's partial segment is discarded, and the index is still exact.
Separate from test_dask.py: slow (a worker restart), bounded to 100,000
records."""
import os
import signal
import threading
import time

import pytest

import tern

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")
import tern.dask  # noqa: E402

from dask_common import check_index, check_terms, cluster, reference, write_tsv  # noqa: E402

pytestmark = pytest.mark.skipif(os.environ.get("TERN_PY_SANITIZED") == "1",
                                reason="worker processes under ASan: too slow to be useful")


@pytest.mark.parametrize("source", ["frame", "tsv"])
def test_worker_killed_mid_build(tmp_path, seed, source):
    cl, client = cluster()
    try:
        pdf, ref = reference(seed, 100_000)
        if source == "frame":
            df = dd.from_pandas(pdf.drop(columns=["version"]), npartitions=8)
        else:  # the C record path
            df = write_tsv(ref, [tmp_path / f"in{j}.tsv" for j in range(2)])
        out = str(tmp_path / "idx")
        staging = out + ".staging"
        pids = client.run(os.getpid)  # worker address -> pid
        killed = []

        def killer():
            # Kill one worker as soon as a range is being written (a
            # part-NNNNN or part-NNNNN.tmp appears in staging).
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                if os.path.isdir(staging) and os.listdir(staging):
                    pid = sorted(pids.values())[0]
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
                time.sleep(0.005)

        t = threading.Thread(target=killer)
        t.start()
        r = tern.dask.build_index(df, out, partitions=8, client=client, progress=False,
                                  blocksize="256KiB")
        t.join()
        assert killed, "no worker was killed: the build ended before any range was written"
        print(f"killed worker pid {killed[0]}")
        assert r["documents"] == len(ref)
        with tern.open(out, readonly=True) as idx:
            idx.verify()
            with idx.snapshot() as s:
                check_index(s, ref)
                check_terms(s, ref)
    finally:
        client.close()
        cl.close()
