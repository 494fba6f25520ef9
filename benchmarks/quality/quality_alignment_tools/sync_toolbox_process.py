"""The Sync Toolbox reference aligner (``sync_ref.py``), run in its own venv and process beside our aligner.

Not named ``synctoolbox``: ``sync_ref.py`` runs from this folder and imports the real package of that name.
"""

from __future__ import annotations

import json
import subprocess
import sys

from benchmarks._common import ROOT

RESULTS = ROOT / "benchmarks" / "results"
VENV = RESULTS / "venv_synctoolbox"
SYNC_REF = ROOT / "benchmarks" / "quality" / "quality_alignment_tools" / "sync_ref.py"


class SyncToolboxFailed(RuntimeError):
    """``sync_ref.py`` exited with an error (the message names its log)."""


def ensure_venv(log) -> str:
    """The venv's python, creating the venv with synctoolbox first if it is absent (once)."""
    if not (VENV / "bin" / "python").exists():
        log(f"setup: creating {VENV} with synctoolbox (once)")
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", "synctoolbox"], check=True)
    return str(VENV / "bin" / "python")


def existing_python():
    """``(python, note)`` of the venv, or ``(None, reason)`` when it is absent or cannot import synctoolbox."""
    py = VENV / "bin" / "python"
    if not py.exists():
        return None, f"no environment at {VENV.relative_to(ROOT)}"
    r = subprocess.run([str(py), "-c", "import synctoolbox, numba; print(numba.__version__)"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return None, f"synctoolbox does not import in {VENV.relative_to(ROOT)}"
    return py, f"numba {r.stdout.strip()}"


def job(job_id: str, wav, score, stretch: bool) -> dict:
    """One alignment for ``sync_ref.py``: ``score`` (a MidiScore) to the recording ``wav``."""
    notes = [[float(a), float(b - a), int(pt), int(v)] for a, b, pt, v in
             zip(score.onsets_s, score.offsets_s, score.pitches, score.velocities)]
    return {"id": job_id, "wav": str(wav), "notes": notes, "event_onsets_s": score.event_onsets_s.tolist(),
            "stretch": stretch}


def start(py, jobs, name: str):
    """Run ``sync_ref.py`` on ``jobs`` with ``py`` in its own process; returns what :func:`finish` needs.

    Its files are ``benchmarks/results/{name}_sync_jobs.json``, ``_sync_out.json`` and ``_sync.log``.
    """
    jobs_path = RESULTS / f"{name}_sync_jobs.json"
    out_path = RESULTS / f"{name}_sync_out.json"
    if out_path.exists():
        out_path.unlink()
    warm = dict(jobs[0], id="warm-up")  # the first call compiles numba kernels: not timed
    json.dump([warm] + jobs, open(jobs_path, "w"))
    fh = open(RESULTS / f"{name}_sync.log", "w")
    proc = subprocess.Popen([str(py), str(SYNC_REF), str(jobs_path), str(out_path)],
                            stdout=fh, stderr=subprocess.STDOUT)
    return proc, fh, out_path


def finish(started) -> dict:
    """``{job id: result}`` once the process ends; raises :class:`SyncToolboxFailed` if it failed."""
    proc, fh, out_path = started
    code = proc.wait()
    fh.close()
    if code != 0:
        raise SyncToolboxFailed(f"the Sync Toolbox reference failed (exit {code}); see {fh.name}")
    return json.load(open(out_path))
