"""Import plans (recognise files, propose recording <-> score pairs) and the undoable item edits:
attach / replace a score, remove an item, each one step of the history that undo and redo take back."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from marginalia.engine import Engine
from marginalia.exceptions import DataFormatError, ParameterError
from marginalia.importing import guess_score
from marginalia.io import write_midi, write_wav
from marginalia.types import BoundaryLabel, MidiScore

SR = 22050


def _wav(path, seconds=2.0):
    t = np.arange(int(SR * seconds)) / SR
    write_wav(path, 0.3 * np.sin(2 * np.pi * np.where(t < 1.0, 220.0, 330.0) * t).astype(np.float32), SR)
    return path


def _mid(path, n=4):
    onsets = np.arange(n) * 0.4
    write_midi(path, MidiScore(pitches=np.arange(60, 60 + n), onsets_s=onsets, offsets_s=onsets + 0.4, name=path.stem))
    return path


def vienna_files(folder):
    """Two recordings and their scores in a new ``folder``, in the Vienna 4x22 layout: performances named
    <piece>_pNN, scores named <piece>; ``{"wav", "other_wav", "mid", "other_mid"}`` → path."""
    folder.mkdir()
    return {"wav": _wav(folder / "Chopin_op10_no3_p01.wav"), "other_wav": _wav(folder / "Chopin_op38_p01.wav"),
            "mid": _mid(folder / "Chopin_op10_no3.mid", 4), "other_mid": _mid(folder / "Chopin_op38.mid", 6)}


@pytest.fixture
def vienna(tmp_path):
    return vienna_files(tmp_path / "data")


def test_guess_pairs_by_stem_or_the_longest_stem_prefix_at_a_separator():
    scores = ["s/Chopin_op10_no3.mid", "s/Chopin_op10.mid", "s/op1.mid", "s/take.musicxml"]
    assert guess_score("a/Chopin_op10_no3_p01.wav", scores) == "s/Chopin_op10_no3.mid"
    assert guess_score("a/Chopin_op10_no4.wav", scores) == "s/Chopin_op10.mid"
    assert guess_score("a/op10_p01.wav", scores) is None          # "op1" is no stem of "op10"
    assert guess_score("a/take.wav", scores) == "s/take.musicxml"  # the same stem wins
    assert guess_score("a/x.wav", []) is None


def test_plan_shows_the_vienna_pair_items_labels_and_a_one_line_error(tmp_path, vienna):
    notes = tmp_path / "data" / "notes.txt"
    notes.write_text("0.5\t0.5\tchange\n1.2\t1.2\tchange\n")
    bad = tmp_path / "data" / "broken.mid"
    bad.write_bytes(b"MThd garbage")
    with Engine.create(tmp_path / "p.marginalia") as eng:
        plan = eng.plan_import([vienna["wav"], vienna["mid"], vienna["other_mid"], notes, bad])
        assert eng.items() == []                                # a plan stores nothing
    by_name = {f.name: f for f in plan.files}
    assert by_name["Chopin_op10_no3_p01.wav"].role == "audio" and by_name["Chopin_op10_no3_p01.wav"].n_items == 1
    assert by_name["Chopin_op10_no3.mid"].summary == "4 score events"
    assert by_name["notes.txt"].role == "audio_labels" and by_name["notes.txt"].n_labels == 2
    err = by_name["broken.mid"].error
    assert by_name["broken.mid"].role == "error" and "broken.mid" in err and "\n" not in err
    assert plan.pairs == {str(vienna["wav"]): str(vienna["mid"])}
    assert plan.summary() == ("Will add 1 item (1 recording with a score); 2 labels; not imported (no recording): "
                              "Chopin_op38.mid; 1 file left out (see the lines above).")


def test_run_import_uses_the_pairs_the_user_chose(tmp_path, vienna):
    with Engine.create(tmp_path / "p.marginalia") as eng:
        plan = eng.plan_import([vienna["wav"], vienna["other_wav"], vienna["mid"], vienna["other_mid"]])
        assert plan.pairs == {str(vienna["wav"]): str(vienna["mid"]),
                              str(vienna["other_wav"]): str(vienna["other_mid"])}
        # the user swaps nothing for the first and takes the score away from the second
        out = eng.run_import(plan, {str(vienna["wav"]): str(vienna["other_mid"]), str(vienna["other_wav"]): None})
        recs = {eng.item(i).name: eng.item(i) for i in out["items"]}
        assert recs["Chopin_op10_no3_p01"].task == "alignment"
        assert recs["Chopin_op10_no3_p01"].meta["score_path"] == str(vienna["other_mid"].resolve())
        assert recs["Chopin_op10_no3_p01"].meta["n_events"] == 6
        assert recs["Chopin_op38_p01"].task == "segmentation" and "score_path" not in recs["Chopin_op38_p01"].meta
        with pytest.raises(ParameterError, match="not a readable score"):
            eng.run_import(plan, {str(vienna["wav"]): str(tmp_path / "elsewhere.mid")})


def _step_state(eng, item_id):
    rec = eng.item(item_id)
    return rec.task, (rec.meta or {}).get("score_path"), [lab.id for lab in eng.labels(item_id)]


@pytest.mark.slow
def test_attach_score_is_one_undoable_step_that_survives_reopening(tmp_path, vienna):
    path = tmp_path / "p.marginalia"
    with Engine.create(path) as eng:
        (item,) = eng.import_files([vienna["wav"]])           # no score among the files: segmented
        lab = eng.add_label(BoundaryLabel(item_id=item, index=20))
        before = _step_state(eng, item)
        step = eng.attach_score(item, vienna["mid"])
        assert step.name == "attach score Chopin_op10_no3.mid to Chopin_op10_no3_p01 (removing its 1 label)"
        after = _step_state(eng, item)
        assert after == ("alignment", str(vienna["mid"].resolve()), [])
        assert eng.score(item).n_events == 4                   # the loaded data follows the new record
        assert eng.next_undo.name == step.name
        assert eng.undo().name == step.name
        assert _step_state(eng, item) == before and eng.labels(item)[0] == lab
        assert eng.score(item) is None
        eng.redo()
        assert _step_state(eng, item) == after
        replaced = eng.attach_score(item, vienna["other_mid"])
        assert replaced.name == "replace the score of Chopin_op10_no3_p01 by Chopin_op38.mid"
        assert eng.session.integrity_check() == []
    with Engine.open(path) as eng:
        assert _step_state(eng, item)[:2] == ("alignment", str(vienna["other_mid"].resolve()))
        assert eng.session.integrity_check() == []
        names = [s.name for s in eng.history()]
        assert names[-4:] == ["attach score Chopin_op10_no3.mid to Chopin_op10_no3_p01 (removing its 1 label)",
                              "undo of attach score Chopin_op10_no3.mid to Chopin_op10_no3_p01 (removing its 1 label)",
                              "redo of attach score Chopin_op10_no3.mid to Chopin_op10_no3_p01 (removing its 1 label)",
                              "replace the score of Chopin_op10_no3_p01 by Chopin_op38.mid"]


def test_a_broken_score_or_a_non_audio_item_changes_nothing(tmp_path, vienna):
    bad = tmp_path / "bad.mid"
    bad.write_bytes(b"MThd not really")
    with Engine.create(tmp_path / "p.marginalia") as eng:
        (item,) = eng.import_files([vienna["wav"]])
        with pytest.raises(DataFormatError):
            eng.attach_score(item, bad)
        assert eng.item(item).task == "segmentation" and not eng.can_undo


@pytest.mark.slow
def test_remove_item_takes_its_labels_and_undo_brings_both_back(tmp_path, vienna):
    path = tmp_path / "p.marginalia"
    with Engine.create(path) as eng:
        ids = eng.import_files([vienna["wav"], vienna["other_wav"]])
        labs = [eng.add_label(BoundaryLabel(item_id=ids[0], index=i)) for i in (10, 30)]
        other = eng.add_label(BoundaryLabel(item_id=ids[1], index=12))
        step = eng.remove_item(ids[0])
        assert step.name == "removal of Chopin_op10_no3_p01 with its 2 labels" and step.deleted == 2
        assert [i.id for i in eng.items()] == [ids[1]] and eng.labels() == [other]
        eng.undo()
        assert sorted(i.id for i in eng.items()) == sorted(ids)
        assert eng.labels(ids[0]) == labs and eng.item(ids[0]).source_path == str(vienna["wav"])
        assert eng.session.integrity_check() == []
        eng.redo()
        assert [i.id for i in eng.items()] == [ids[1]]
    with Engine.open(path) as eng:
        assert [i.id for i in eng.items()] == [ids[1]] and eng.labels() == [other]
        assert eng.session.integrity_check() == []
        assert not eng.can_undo        # yesterday's removal: out of Ctrl+Z's reach, not of the history's
        restored = eng.restore(step.id - 1)       # the state right before the removal: the item is back
        assert sorted(i.id for i in eng.items()) == sorted(ids)
        assert eng.labels(ids[0]) == labs and eng.labels(ids[1]) == [other]
        assert eng.item(ids[0]).source_path == str(vienna["wav"]) and eng.spectrogram(ids[0]) is not None
        assert eng.session.integrity_check() == []
        assert eng.undo().id == restored.id and [i.id for i in eng.items()] == [ids[1]]


@pytest.mark.slow
def test_restore_takes_a_recording_back_to_before_its_score_with_its_labels(tmp_path, vienna):
    path = tmp_path / "p.marginalia"
    with Engine.create(path) as eng:
        (item,) = eng.import_files([vienna["wav"]])
        labs = [eng.add_label(BoundaryLabel(item_id=item, index=i)) for i in (10, 30)]
        before = eng.history()[-1]
        eng.attach_score(item, vienna["mid"])
        assert eng.item(item).task == "alignment" and eng.labels() == []
    with Engine.open(path) as eng:
        eng.restore(before.id)
        assert eng.item(item).task == "segmentation" and "score_path" not in eng.item(item).meta
        assert eng.labels(item) == labs and eng.session.integrity_check() == []


def test_a_schema_4_project_is_migrated_and_takes_item_edits(tmp_path, vienna):
    path = tmp_path / "old.marginalia"
    with Engine.create(path) as eng:
        (item,) = eng.import_files([vienna["wav"]])
        eng.add_label(BoundaryLabel(item_id=item, index=20))
    conn = sqlite3.connect(path)      # make it what schema 4 wrote: no 'item' op in the edit log
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'label_log'").fetchone()
    version = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'label_log'", (sql.replace(", 'item')", ")"),))
    conn.execute(f"PRAGMA schema_version = {version + 1}")
    conn.execute("PRAGMA writable_schema = OFF")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    with Engine.open(path) as eng:
        eng.remove_item(item)
        assert eng.items() == [] and eng.session.integrity_check() == []
        eng.undo()
        assert len(eng.labels(item)) == 1


@pytest.mark.slow
def test_an_untrained_recording_is_segmented_into_phrases_not_frames(tmp_path):
    """Before any label, a recording without a score gets segments of seconds, where its sound changes."""
    t = np.arange(int(SR * 8.0)) / SR
    freq = np.array([220.0, 330.0, 262.0, 392.0])[np.minimum((t // 2.0).astype(int), 3)]
    noise = 0.02 * np.random.default_rng(0).standard_normal(t.size)
    write_wav(tmp_path / "tones.wav", (0.3 * np.sin(2 * np.pi * freq * t) + noise).astype(np.float32), SR)
    with Engine.create(tmp_path / "p.marginalia") as eng:
        (item,) = eng.import_files([tmp_path / "tones.wav"])
        pred = eng.predict(item)
        times = np.asarray(eng.sequence(item).positions)
        changes = times[np.asarray(pred.structure.changes[:-1], dtype=int)]   # the last entry is T
    assert 1 <= len(changes) <= 3, changes                   # not a change every few frames
    assert all(np.min(np.abs(c - np.array([2.0, 4.0, 6.0]))) < 0.2 for c in changes), changes


def test_importing_a_recording_again_with_its_score_attaches_the_score(tmp_path, vienna):
    """The issue's path: a recording imported alone, then again with its score, is aligned, not refused."""
    with Engine.create(tmp_path / "p.marginalia") as eng:
        (item,) = eng.import_files([vienna["wav"]])
        plan = eng.plan_import([vienna["wav"], vienna["mid"]])
        (wav,) = plan.of_role("audio")
        assert wav.n_items == 0 and "already in the project as Chopin_op10_no3_p01 (no score)" in wav.summary
        out = eng.run_import(plan)
        assert out == {"items": [], "labels": [], "scored": [item]}
        assert eng.item(item).task == "alignment" and [i.id for i in eng.items()] == [item]
        assert eng.run_import(eng.plan_import([vienna["wav"], vienna["mid"]]))["scored"] == []   # already its score
        eng.undo()
        assert eng.item(item).task == "segmentation"
