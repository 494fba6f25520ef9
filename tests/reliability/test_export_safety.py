"""Exports never destroy what is on disk, never write outside their target, and leave no leftovers.

Each test is a defect met by hand before: a bundle export that emptied (and re-moded) the folder it
was given, the project inside it included; exports that wrote ``../X`` files above ``--out``; hidden
``.partial-*`` folders of killed exports; empty ``--out`` folders of failed commands.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from marginalia.cli import main
from marginalia.engine import Engine
from marginalia.exceptions import UsageError
from marginalia.export_target import MARKER, clean_leftovers
from marginalia.exports import export as run_export
from marginalia.types import Alignment, MidiScore, RegionKind, RegionLabel, Segmentation

from .engine_kill_child import make_profiles

HOSTILE = ("../../../X", "..", "/etc/passwd", "a\\..\\b", "con", ".hidden", "tab\tand\nnewline\x00nul",
           "é" * 300, "A", "a")


def snapshot(folder: Path) -> dict:
    """Every entry under ``folder`` with its bytes (files) and mode: what must not change."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            p = Path(root) / name
            st = p.lstat()
            out[str(p.relative_to(folder))] = (st.st_mode, p.read_bytes() if p.is_file() else None)
    out["."] = (folder.stat().st_mode, None)
    return out


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project holding its own backups beside it, with one region label."""
    folder = tmp_path_factory.mktemp("proj")
    make_profiles(folder / "profiles.csv")
    path = folder / "p.marginalia"
    with Engine.create(path) as eng:
        ids = eng.import_files([folder / "profiles.csv"])
        eng.add_label(RegionLabel(ids[0], start=2, stop=10, kind=RegionKind.ZERO))
    return path


def cli_export(project, kind, out, *extra):
    return main(["export", str(project), "--format", kind, "--out", str(out), "-q", *extra])


# ------------------------------------------------------------------ folders that are not ours

def test_a_bundle_into_the_projects_own_folder_is_refused_and_nothing_changes(project, capsys):
    folder = project.parent
    before = snapshot(folder)
    for extra in ((), ("--force",)):
        assert cli_export(project, "bundle", folder, *extra) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "not empty" in err and str(folder) in err
    assert snapshot(folder) == before           # the project, its backups and the folder's mode


def test_a_non_empty_folder_is_refused_for_every_folder_format(project, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me\n")
    before = snapshot(out)
    for kind in ("bundle", "audacity", "aligned-midi", "alignment-csv"):
        assert cli_export(project, kind, out, "--force") == 2
        assert "not a Marginalia export" in capsys.readouterr().err
    assert snapshot(out) == before and sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_an_empty_folder_is_filled_and_keeps_its_mode(project, tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    os.chmod(out, 0o751)
    assert cli_export(project, "bundle", out) == 0
    assert (out / "manifest.json").is_file() and out.stat().st_mode & 0o777 == 0o751
    new = tmp_path / "new"
    assert cli_export(project, "bundle", new) == 0
    mask = os.umask(0)
    os.umask(mask)
    assert new.stat().st_mode & 0o777 == 0o777 & ~mask         # a new folder is not made private (0700)


def test_force_replaces_only_our_previous_export(project, tmp_path, capsys):
    out = tmp_path / "bundle"
    assert cli_export(project, "bundle", out) == 0
    first = json.loads((out / "manifest.json").read_text())
    assert cli_export(project, "bundle", out) == 2                            # not without --force
    assert "pass --force" in capsys.readouterr().err
    assert cli_export(project, "bundle", out, "--force") == 0
    assert json.loads((out / "manifest.json").read_text())["created"] >= first["created"]
    (out / "features" / "my-notes.txt").write_text("added by hand\n")          # now partly the user's
    before = snapshot(out)
    assert cli_export(project, "bundle", out, "--force") == 2
    assert "features/my-notes.txt" in capsys.readouterr().err
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle"]           # no partial or old folder


def test_a_read_only_folder_is_refused_in_one_line(project, tmp_path, capsys, monkeypatch):
    if os.geteuid() == 0:   # permission bits do not bind root: stand for a read-only mount instead
        import marginalia.export_target as target
        monkeypatch.setattr(target, "folder_writable", lambda folder: "ro" not in str(folder))
    locked = tmp_path / "ro"
    locked.mkdir()
    os.chmod(locked, 0o555)
    try:
        assert cli_export(project, "bundle", locked / "b") == 2
        assert cli_export(project, "annotations-csv", locked / "a.csv") == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 2 and all("cannot write into folder" in line for line in err)
    finally:
        os.chmod(locked, 0o755)


def test_out_is_checked_before_the_project_is_opened(tmp_path, capsys):
    project = tmp_path / "damaged.marginalia"
    project.write_bytes(b"not a project")
    assert cli_export(project, "bundle", tmp_path / "missing" / "b") == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "missing").exists()


def test_a_folder_export_with_nothing_to_write_leaves_no_folder(project, tmp_path):
    assert cli_export(project, "audacity", tmp_path / "tracks") == 1          # no audio items
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ files

def test_an_existing_file_is_replaced_only_when_it_is_the_same_kind_of_export(project, tmp_path, capsys):
    profiles = project.parent / "profiles.csv"
    data = profiles.read_bytes()
    assert cli_export(project, "annotations-csv", profiles) == 2
    assert cli_export(project, "annotations-csv", profiles, "--force") == 2
    assert "is not an annotations-csv export" in capsys.readouterr().err
    assert profiles.read_bytes() == data
    out = tmp_path / "a.csv"
    assert cli_export(project, "annotations-csv", out) == 0
    assert cli_export(project, "annotations-csv", out) == 2
    assert cli_export(project, "annotations-csv", out, "--force") == 0
    assert cli_export(project, "segments-csv", out, "--force") == 2         # another kind: left alone
    assert out.read_text().startswith("profile.id,chromosome,min,max,annotation")


def test_the_project_file_itself_is_never_an_export_target(project, capsys):
    before = snapshot(project.parent)
    for kind in ("annotations-csv", "segments-csv", "bedgraph"):
        assert cli_export(project, kind, project, "--force") == 2
    assert snapshot(project.parent) == before


# ------------------------------------------------------------------ leftovers of killed exports

def test_leftovers_of_killed_exports_are_cleaned_on_the_next_run(project, tmp_path):
    out = tmp_path / "bundle"
    pid = dead_pid()
    partial = tmp_path / f".bundle.partial-{pid}-abc123"
    (partial / "features").mkdir(parents=True)
    (partial / "manifest.json").write_text("{}")
    alive = tmp_path / f".bundle.partial-{os.getppid()}-zzz"     # a running export's: left alone
    alive.mkdir()
    tmpfile = tmp_path / f".a.csv.{pid}.1234.tmp"
    tmpfile.write_text("half")
    assert cli_export(project, "bundle", out) == 0
    assert cli_export(project, "annotations-csv", tmp_path / "a.csv") == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, "a.csv", "bundle"])


def test_a_previous_export_set_aside_by_a_killed_export_is_put_back(project, tmp_path):
    out = tmp_path / "bundle"
    assert cli_export(project, "bundle", out) == 0
    aside = tmp_path / f".bundle.old-{dead_pid()}-ab12"
    os.replace(out, aside)                       # killed between its two renames
    assert clean_leftovers(out) == [aside]
    assert (out / "manifest.json").is_file() and not aside.exists()


# ------------------------------------------------------------------ names that become paths

@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A project whose item ids and names try to leave the export folder (valid checksums: built by the API)."""
    folder = tmp_path_factory.mktemp("hostile")
    make_profiles(folder / "prof.csv")
    path = folder / "deep" / "er" / "h.marginalia"
    path.parent.mkdir(parents=True)
    with Engine.create(path) as eng:
        spec = eng._loader.describe(folder / "prof.csv", score_path=None)[0]
        for _k, bad in enumerate(HOSTILE):
            eng.session.add_item(bad, spec.kind, spec.task, source_path=str(folder / "prof.csv"), meta=spec.meta,
                                 item_id=bad)
    return path


def test_hostile_item_ids_stay_inside_the_bundle(hostile, tmp_path):
    before = snapshot(hostile.parent.parent.parent)
    out = hostile.parent / "b"
    assert cli_export(hostile, "bundle", out) == 0
    after = snapshot(hostile.parent.parent.parent)
    new = sorted(set(after) - set(before))
    assert [k for k in new if not (k == "deep/er/b" or k.startswith(("deep/er/b/", "deep/er/h.marginalia")))] == []
    feats = sorted(p.name for p in (out / "features").iterdir())
    assert len(feats) == len(HOSTILE)           # "A" and "a" do not collide on a case-insensitive disk
    assert len({f.casefold() for f in feats}) == len(feats)
    for name in feats:
        assert not name.startswith(".") and len(name.encode()) <= 130 and "\x00" not in name
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(i["id"] for i in manifest["items"]) == sorted(HOSTILE)   # the ids themselves are kept
    assert all((out / i["features"]).is_file() for i in manifest["items"])


class _AudioStub:
    """The part of the engine the per-audio-item exporters use, with hostile names."""

    def __init__(self, names):
        self.recs = [SimpleNamespace(id=f"i{k}", name=n, kind="audio", task="alignment") for k, n in enumerate(names)]
        times = np.arange(40) * 0.05
        self.score = MidiScore(pitches=[60, 64, 67], onsets_s=[0.0, 0.5, 1.0], offsets_s=[0.5, 1.0, 1.5])
        self.seq = SimpleNamespace(positions=times)
        self.session = SimpleNamespace(items=lambda: list(self.recs))

    def data(self, item_id):
        return SimpleNamespace(sequence=self.seq, score=self.score)

    def prediction(self, item_id):
        return SimpleNamespace(structure=Alignment(onsets=np.array([0, 10, 20]), n_frames=40), times_s=None)


def test_hostile_audio_names_stay_inside_every_per_item_export(tmp_path):
    stub = _AudioStub(HOSTILE)
    (tmp_path / "a" / "b").mkdir(parents=True)
    for kind in ("audacity", "aligned-midi", "alignment-csv"):
        out = tmp_path / "a" / "b" / kind
        written = run_export(stub, kind, out)
        assert len(written) == len(HOSTILE)
        assert all(p.parent == out and p.is_file() for p in written)
        assert sorted(p.name for p in out.iterdir()) == sorted([p.name for p in written] + [MARKER])
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["aligned-midi", "alignment-csv", "audacity"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]


def test_the_per_item_exports_replace_their_own_previous_export_with_force(tmp_path):
    stub = _AudioStub(["one", "two"])
    out = tmp_path / "tracks"
    run_export(stub, "audacity", out)
    with pytest.raises(UsageError, match="pass --force"):
        run_export(stub, "audacity", out)
    stub.recs = stub.recs[:1]
    assert [p.name for p in run_export(stub, "audacity", out, force=True)] == ["one.txt"]
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "one.txt"]      # the old export as a whole


def test_segmentation_items_export_audacity_labels_too(tmp_path):
    stub = _AudioStub(["seg"])
    stub.prediction = lambda item_id: SimpleNamespace(structure=Segmentation(changes=np.array([10, 40])),
                                                      times_s=None)
    written = run_export(stub, "audacity", tmp_path / "t")
    # one change (at frame 10); the segmentation's end at frame 40 is no change, so it is not a label
    assert written[0].read_text() == "0.5\t0.5\t1\n"
