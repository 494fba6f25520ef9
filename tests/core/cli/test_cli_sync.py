"""``marginalia-cli sync``, ``train --task sync`` and ``carry`` on generated recordings of one melody."""

import csv
import re

import numpy as np
import pytest

from marginalia.cli import main
from marginalia.engine import Engine
from marginalia.types import BoundaryLabel, RegionKind, RegionLabel
from tests.core.sync.synthetic import SR, stretched_pair


@pytest.fixture(scope="module")
def takes(tmp_path_factory):
    """a.wav, b.wav, c.wav: one melody at three tempo curves, with each take's note onsets."""
    from marginalia.io.audio import write_wav
    folder = tmp_path_factory.mktemp("takes")
    ya, yb, on_a, on_b = stretched_pair(0)
    _, yc, _, on_c = stretched_pair(0, start_b=0.5, stretch=(1.2, 0.9))
    onsets = {"a": on_a, "b": on_b, "c": on_c}
    for name, y in (("a", ya), ("b", yb), ("c", yc)):
        write_wav(folder / f"{name}.wav", y, SR)
        (folder / f"{name}_onsets.csv").write_text(
            "note,onset_s\n" + "".join(f"{i},{t:.4f}\n" for i, t in enumerate(onsets[name])))
    (folder / "pairs.csv").write_text("reference,target,reference_onsets,target_onsets\n"
                                      "a.wav,b.wav,a_onsets.csv,b_onsets.csv\na.wav,c.wav,a_onsets.csv,c_onsets.csv\n")
    return folder, onsets


def read_map(path):
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return np.array([[float(r["reference_time_s"]), float(r["target_time_s"])] for r in rows])


def carried(table, times):
    ref, tgt = table[:, 0], table[:, 1]
    u = np.unique(ref)
    mean = np.array([tgt[ref == x].mean() for x in u])
    return np.interp(times, u, mean)


@pytest.mark.slow
def test_sync_writes_a_time_map_that_carries_every_onset(takes, tmp_path, capsys):
    folder, onsets = takes
    out = tmp_path / "map.csv"
    assert main(["sync", "--reference", str(folder / "a.wav"), "--target", str(folder / "b.wav"),
                 "--out", str(out)]) == 0
    table = read_map(out)
    assert np.all(np.diff(table, axis=0) >= 0)
    err = np.abs(carried(table, onsets["a"]) - onsets["b"])
    assert np.median(err) < 0.015 and err.max() < 0.03
    assert "sync: least sure at " in capsys.readouterr().err
    assert main(["sync", "--reference", str(folder / "a.wav"), "--target", str(folder / "b.wav"), "--out", "-",
                 "-q"]) == 0
    assert capsys.readouterr().out.startswith("reference_time_s,target_time_s\n")


@pytest.mark.slow
def test_sync_passes_through_the_anchors(takes, tmp_path):
    folder, onsets = takes
    anchors = tmp_path / "anchors.csv"
    # deliberately off by 80 ms: the path must obey the user, not the audio
    anchors.write_text(f"reference_time_s,target_time_s\n{onsets['a'][10]:.4f},{onsets['b'][10] + 0.08:.4f}\n")
    out = tmp_path / "map.csv"
    assert main(["sync", "--reference", str(folder / "a.wav"), "--target", str(folder / "b.wav"),
                 "--anchors", str(anchors), "--out", str(out), "-q"]) == 0
    table = read_map(out)
    near = np.abs(table[:, 0] - onsets["a"][10]) < 0.006
    assert np.any(np.abs(table[near, 1] - (onsets["b"][10] + 0.08)) < 0.006)


@pytest.mark.slow
@pytest.mark.parametrize("text,message", [
    ("reference_time_s,target_time_s\n1.0,2.0\n2.0,1.0\n", r"anchors: \(1.000 s -> 2.000 s\) and \(2.000 s -> "
                                                           r"1.000 s\) cross"),
    ("reference_time_s,target_time_s\n1.0,abc\n", r"anchors.csv.*line 2.*column 'target_time_s'"),
    ("ref,tgt\n1,2\n", r"expected the columns reference_time_s,target_time_s"),
])
def test_bad_anchors_are_one_line(takes, tmp_path, capsys, text, message):
    folder, _ = takes
    anchors = tmp_path / "anchors.csv"
    anchors.write_text(text)
    code = main(["sync", "--reference", str(folder / "a.wav"), "--target", str(folder / "b.wav"),
                 "--anchors", str(anchors), "--out", str(tmp_path / "map.csv"), "-q"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1
    assert re.search(message, err), err
    assert not (tmp_path / "map.csv").exists()


@pytest.mark.slow
def test_train_sync_writes_a_model_that_sync_reads_and_align_refuses(takes, tmp_path, capsys):
    folder, onsets = takes
    model = tmp_path / "sync.model"
    assert main(["train", "--task", "sync", "--pairs", str(folder / "pairs.csv"), "--out", str(model),
                 "--max-iter", "5", "-q"]) == 0
    out = tmp_path / "map.csv"
    assert main(["sync", "--reference", str(folder / "a.wav"), "--target", str(folder / "b.wav"),
                 "--model", str(model), "--out", str(out), "-q"]) == 0
    err = np.abs(carried(read_map(out), onsets["a"]) - onsets["b"])
    assert np.median(err) < 0.015
    mid = tmp_path / "x.mid"
    from marginalia.io.midi import write_midi
    from marginalia.types import MidiScore
    write_midi(mid, MidiScore(pitches=np.array([60, 62]), onsets_s=np.array([0.0, 0.5]), offsets_s=np.array([0.4, 0.9])))
    capsys.readouterr()
    code = main(["align", "--score", str(mid), "--audio", str(folder / "a.wav"), "--model", str(model),
                 "--out", str(tmp_path / "al.csv")])
    err_text = capsys.readouterr().err.strip()
    assert code == 2 and "is a sync model; this command needs an alignment model" in err_text
    assert len(err_text.splitlines()) == 1


def test_train_sync_refuses_unmatched_onset_tables_in_one_line(takes, tmp_path, capsys):
    folder, _ = takes
    (tmp_path / "short.csv").write_text("onset_s\n0.5\n1.0\n")
    (tmp_path / "long.csv").write_text("onset_s\n0.5\n1.0\n1.5\n")
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(f"reference,target,reference_onsets,target_onsets\n{folder / 'a.wav'},{folder / 'b.wav'},"
                     "short.csv,long.csv\n")
    code = main(["train", "--task", "sync", "--pairs", str(pairs), "--out", str(tmp_path / "m.model")])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1
    assert "line 2" in err and "have 2 and 3 rows" in err


def _created(folder, tmp_path, names="abc"):
    """A project made by ``marginalia-cli project create`` from the takes ``names``: its path and item ids by name."""
    project = tmp_path / "p.marginalia"
    assert main(["project", "create", str(project), "--import", *(str(folder / f"{n}.wav") for n in names),
                 "-q"]) == 0
    with Engine.open(project, read_only=True) as eng:
        return project, {it.name: it.id for it in eng.items()}


@pytest.mark.slow
def test_carry_maps_the_labels_onto_every_target_as_one_step(takes, tmp_path, capsys):
    folder, onsets = takes
    project, ids = _created(folder, tmp_path)
    with Engine.open(project) as eng:
        pos = eng.sequence(ids["a"]).positions
        idx = [int(np.searchsorted(pos, t)) for t in onsets["a"][[3, 8, 15]]]
        eng.add_labels([BoundaryLabel(item_id=ids["a"], index=i) for i in idx]
                       + [RegionLabel(item_id=ids["a"], start=idx[0] + 3, stop=idx[1] - 3, kind=RegionKind.ZERO)])
        before = eng.history()[-1].id
    assert main(["carry", str(project), "--from", "a", "--to", "b", "c"]) == 0
    assert f"restore {project} --to {before}" in capsys.readouterr().err
    with Engine.open(project) as eng:
        last = eng.history()[-1]
        assert last.name == "carry of 4 labels from a to 2 recordings"
        for name in "bc":
            labels = eng.labels(ids[name])
            tpos = eng.sequence(ids[name]).positions
            bounds = sorted(tpos[lab.index] for lab in labels if isinstance(lab, BoundaryLabel))
            assert len(bounds) == 3 and len(labels) == 4
            # a boundary sits at the first frame after the onset: within two frames of the truth
            assert np.all(np.abs(np.array(bounds) - onsets[name][[3, 8, 15]]) < 0.05)
        assert eng.restore(before) is not None    # one step takes every carried label back
        assert eng.labels(ids["b"]) == [] and eng.labels(ids["c"]) == []
    # carrying twice adds nothing twice
    assert main(["carry", str(project), "--from", "a", "--to", "b", "-q"]) == 0
    capsys.readouterr()
    assert main(["carry", str(project), "--from", "a", "--to", "b"]) == 0
    assert "carry: nothing added to the 1 recording(s): the 4 carried label(s) are already there" in \
        capsys.readouterr().err
    with Engine.open(project, read_only=True) as eng:
        assert len(eng.labels(ids["b"])) == 4
        assert eng.history()[-1].name == "carry of 4 labels from a to 1 recording"
    # --suggest: suggestions to review in the app, not labels
    capsys.readouterr()
    assert main(["carry", str(project), "--from", "a", "--to", "c", "--suggest"]) == 0
    assert "4 suggested label(s) to review in the app added to 1 recording(s)" in capsys.readouterr().err
    with Engine.open(project, read_only=True) as eng:
        assert eng.labels(ids["c"]) == [] and len(eng.suggestions(ids["c"])) == 4


@pytest.mark.slow
def test_carry_goes_through_the_projects_sync_anchors_with_its_learned_metric(takes, tmp_path, capsys):
    folder, onsets = takes
    project, ids = _created(folder, tmp_path, "ab")
    with Engine.open(project) as eng:
        pos = eng.sequence(ids["a"]).positions
        index = int(np.searchsorted(pos, onsets["a"][10]))
        eng.add_label(BoundaryLabel(item_id=ids["a"], index=index))
        t_a = 0.5 * (pos[index - 1] + pos[index])
        # an anchor 0.3 s after where the music is: the carried boundary must follow it
        eng.add_sync_anchor(ids["b"], ids["a"], float(onsets["b"][10]) + 0.3, float(t_a))
        eng.learn_sync_metric(options={"max_iter": 10})
        model_id = eng.sync_model_id
    capsys.readouterr()
    assert main(["carry", str(project), "--from", "a", "--to", "b"]) == 0
    assert (f"aligning with the project's learned sync metric ({model_id}) through 1 sync anchor"
            in capsys.readouterr().err)
    with Engine.open(project, read_only=True) as eng:
        (lab,) = eng.labels(ids["b"])
        t_b = eng.sequence(ids["b"]).positions[lab.index]
        assert abs(t_b - (onsets["b"][10] + 0.3)) < 0.03


@pytest.mark.slow
@pytest.mark.parametrize("argv,message", [
    (["--from", "zz", "--to", "b"], "item 'zz': no item of"),
    (["--from", "a", "--to", "a"], "is the source itself"),
    (["--from", "b", "--to", "c"], "item 'b' has no labels to carry"),
])
def test_carry_usage_errors_are_one_line(takes, tmp_path, capsys, argv, message):
    folder, _ = takes
    project, ids = _created(folder, tmp_path)
    with Engine.open(project) as eng:
        eng.add_labels([BoundaryLabel(item_id=ids["a"], index=40)])
    capsys.readouterr()
    code = main(["carry", str(project), *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("command", [["predict"], ["batch", "predict"]])
def test_predict_refuses_a_sync_model_up_front_in_one_line(takes, tmp_path, capsys, command):
    from marginalia.models.files import save_model
    from marginalia.sync import SyncAligner
    folder, _ = takes
    model = tmp_path / "sync.model"
    save_model(model, SyncAligner().with_metric_weights(np.ones(25)))
    out = tmp_path / "predicted"
    code = main(command + [str(model), str(folder / "a.wav"), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert str(model) in err and "is a sync model" in err and "marginalia-cli sync --reference" in err
    assert not out.exists()


def test_sync_question_names_a_reference_time_and_two_candidates(tmp_path, capsys):
    from marginalia.io.audio import write_wav
    from tests.core.sync.synthetic import repeat_pair
    ya, yb, on_a, on_b, n_a, n_p = repeat_pair()
    write_wav(tmp_path / "once.wav", ya, SR)
    write_wav(tmp_path / "twice.wav", yb, SR)
    assert main(["sync", "--reference", str(tmp_path / "once.wav"), "--target", str(tmp_path / "twice.wav"),
                 "--out", str(tmp_path / "map.csv"), "--question"]) == 0   # the flag of older scripts still runs
    line = capsys.readouterr().err.strip().splitlines()[-1]
    m = re.fullmatch(r"sync: least sure at ([\d.]+) s of the reference: ([\d.]+) s of the target, "
                     r"or ([\d.]+) s \(margin [\d.e+-]+\); put the right one in --anchors", line)
    assert m, line
    ref_s, a, b = map(float, m.groups())
    # the phrase one take repeats: asked inside it, the candidates one play apart
    assert on_a[n_a] <= ref_s <= on_a[n_a + n_p]
    assert abs(abs(a - b) - (on_b[n_a + n_p] - on_b[n_a])) < 0.05


def test_the_status_line_asks_where_the_music_sounds_never_in_the_lead_in_or_the_ring(tmp_path, capsys):
    from marginalia.io.audio import write_wav
    from tests.core.sync.synthetic import ringing_pair
    ya, yb, on_a, _ = ringing_pair()
    write_wav(tmp_path / "a.wav", ya, SR)
    write_wav(tmp_path / "b.wav", yb, SR)
    assert main(["sync", "--reference", str(tmp_path / "a.wav"), "--target", str(tmp_path / "b.wav"),
                 "--out", str(tmp_path / "map.csv")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert not any("margin 0;" in line or "margin 0," in line for line in err), err
    m = re.fullmatch(r"sync: least sure at ([\d.]+) s of the reference: .*\(margin ([\d.e+-]+)\); .*", err[-1])
    assert m, err[-1]
    assert on_a[0] - 0.05 <= float(m.group(1)) <= on_a[-1] + 0.05 and float(m.group(2)) > 0


@pytest.mark.slow
def test_carry_of_imported_audacity_regions_keeps_their_edge_boundaries_together(takes, tmp_path, capsys):
    """An Audacity region becomes a region label and boundaries at its edges; carried, they must still agree."""
    folder, _ = takes
    project, ids = _created(folder, tmp_path)
    labels = tmp_path / "a.txt"
    labels.write_text("0.5\t1.5\tverse\n3.0\t4.0\tchorus\n")
    assert main(["import", str(project), str(labels), "--format", "audacity", "--item", "a", "-q"]) == 0
    with Engine.open(project, read_only=True) as eng:
        n_source = len(eng.labels(ids["a"]))
    capsys.readouterr()
    assert main(["carry", str(project), "--from", "a", "--to", "b", "c"]) == 0, capsys.readouterr().err
    with Engine.open(project, read_only=True) as eng:
        for name in "bc":
            carried = eng.labels(ids[name])
            assert len(carried) == n_source
            edges = {b.index for b in carried if isinstance(b, BoundaryLabel)}
            for region in (r for r in carried if isinstance(r, RegionLabel)):
                assert {region.start, region.stop} <= edges


@pytest.mark.slow
def test_train_a_project_learns_its_sync_metric_stores_it_and_writes_it_for_sync(takes, tmp_path, capsys):
    folder, onsets = takes
    project, ids = _created(folder, tmp_path, "ab")
    model = tmp_path / "out" / "study_sync.model"
    code = main(["train", str(project), "--task", "sync", "--out", str(model)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "nothing to learn the sync metric from" in err
    assert not model.exists() and "steps" not in err
    with Engine.open(project) as eng:
        for k in (4, 12, 20):
            eng.add_sync_anchor(ids["a"], ids["b"], float(onsets["a"][k]), float(onsets["b"][k]))
    assert main(["train", str(project), "--task", "sync", "--out", str(model), "--max-iter", "5", "--C", "3"]) == 0
    err = capsys.readouterr().err
    assert "train: Learned the sync metric from 3 sync anchors on 1 pair" in err
    with Engine.open(project, read_only=True) as eng:
        stored = eng.sync_model_id
        assert f"stored the sync metric as {stored} in {project} and wrote {model}" in err
        from marginalia.sync.anchors import project_aligner
        weights = project_aligner(eng).metric_weights()
        assert project_aligner(eng).C == 3.0 and project_aligner(eng).max_iter == 5
    from marginalia.models.files import load_model
    assert np.allclose(load_model(model, task="sync").sync_aligner().metric_weights(), weights)
    assert main(["sync", "--reference", str(folder / "a.wav"), "--target", str(folder / "b.wav"),
                 "--model", str(model), "--out", str(tmp_path / "map.csv"), "-q"]) == 0
    assert main(["export", str(project), "--format", "sync-model", "--out", str(tmp_path / "again.model"),
                 "-q"]) == 0
    assert np.allclose(load_model(tmp_path / "again.model").sync_aligner().metric_weights(), weights)
