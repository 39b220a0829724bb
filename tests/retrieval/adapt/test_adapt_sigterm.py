"""``ragrig adapt`` stopped by SIGTERM mid-training (a scheduler's cancel, ``kill``): the trainer's scratch folder and
the temp model folder are removed, no model folder appears, and the process ends by the signal with one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
DOCS = {f"d{i}.md": f"# Doc {i}\n\n" + "".join(
    f"## Part {i}.{j}\n\nThe body of part {j} of document {i}. It says something about topic {i * 7 + j}. "
    f"A second sentence on the same subject, so a cloze pair has a rest.\n\n" for j in range(6)) for i in range(6)}


def test_sigterm_mid_training_leaves_nothing_behind(published, ragrig_home: Path, tmp_path: Path) -> None:
    corpus = published(DOCS)
    models = ragrig_home / "models"
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "ragrig"), "adapt", "--no-prefect", "-q", "--no-compare",
         "--set", f"corpus.path={corpus}", "--set", "retrieval.synonyms=null", "--set", "eval.testsets=[]",
         "--set", "embedding.adapt.epochs=50"],  # long enough to be stopped mid-training
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "RAGRIG_HOME": str(ragrig_home)},
        start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if models.is_dir() and any("-run-" in p.name for p in models.iterdir()):
                break  # the trainer's scratch folder: training has begun
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    assert proc.returncode == -signal.SIGTERM, err.decode()[-2000:]
    assert err.decode().strip().splitlines()[-1] == "terminated (SIGTERM)"
    assert list(models.iterdir()) == []  # no scratch, no temp model folder, no model
