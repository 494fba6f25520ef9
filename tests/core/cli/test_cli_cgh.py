"""train / predict / evaluate on generated aCGH tables, in process and through the console script."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from marginalia.cli import main
from marginalia.io.cgh import read_profiles

from .conftest import LAYOUT, model_with, positions, write_cgh


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_train_writes_a_segmentation_model_with_provenance(seg_model, cgh_dir):
    from marginalia.models.files import load_model
    m = load_model(seg_model)
    # the default is the aCGH recipe: point-wise Hermite features, SSVM metric, penalty law in the file
    assert m.task == "segmentation" and m.features == "cgh-pointwise" and m.model.n_features_ == 6
    prov = m.provenance
    assert prov["n_sequences"] == 6 and prov["n_labels"] == 9 and prov["learner"] == "ssvm"
    assert prov["recipe"] == "penalty-law" and "all" in prov["penalty_law"]["laws"]
    assert m.penalty_law() is not None
    assert len(prov["label_hash"]) == 64
    assert {Path(f["path"]).name for f in prov["trained_on"]} == {"profiles.csv", "annotations.csv"}


def test_predict_profiles_writes_breaks_midway_and_segments(seg_model, cgh_dir, tmp_path, capsys):
    out = tmp_path / "pred"
    assert main(["predict", str(seg_model), "--profiles", str(cgh_dir / "profiles.csv"), "--out", str(out)]) == 0
    breaks = read_csv(out / "breaks.csv")
    assert list(breaks[0]) == ["profile.id", "chromosome", "position"]
    pos = positions()
    expected = {(pid, chrom, (pos[c - 1] + pos[c]) / 2) for (pid, chrom), c in LAYOUT.items() if c is not None}
    assert {(r["profile.id"], r["chromosome"], float(r["position"])) for r in breaks} == expected
    segs = read_csv(out / "segments.csv")
    assert list(segs[0]) == ["profile.id", "chromosome", "first.position", "last.position", "probes", "mean"]
    assert len(segs) == sum(1 if c is None else 2 for c in LAYOUT.values())
    first = [r for r in segs if (r["profile.id"], r["chromosome"]) == ("1", "1")]
    assert [(float(r["first.position"]), float(r["last.position"])) for r in first] == [(pos[0], pos[29]),
                                                                                          (pos[30], pos[-1])]
    assert [int(r["probes"]) for r in first] == [30, len(pos) - 30]
    seq = {s.name: s for s in read_profiles(cgh_dir / "profiles.csv")}["1:1"]
    assert float(first[1]["mean"]) == pytest.approx(seq.values[30:, 0].mean())
    # rows follow the file's order of sequences
    assert [(r["profile.id"], r["chromosome"]) for r in breaks] == [k for k, c in LAYOUT.items() if c is not None]
    assert "6 items predicted" in capsys.readouterr().err


@pytest.mark.slow
def test_predict_and_evaluate_give_the_same_outputs_on_any_number_of_threads(seg_model, cgh_dir, tmp_path, capsys):
    base = ["--profiles", str(cgh_dir / "profiles.csv")]
    for jobs in ("1", "3"):
        assert main(["predict", str(seg_model), *base, "--out", str(tmp_path / jobs), "--jobs", jobs]) == 0
        assert main(["evaluate", str(seg_model), *base, "--annotations", str(cgh_dir / "annotations.csv"),
                     "--out", str(tmp_path / f"eval{jobs}.csv"), "--jobs", jobs]) == 0
    for name in ("breaks.csv", "segments.csv"):
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "3" / name).read_bytes()
    assert (tmp_path / "eval1.csv").read_bytes() == (tmp_path / "eval3.csv").read_bytes()
    capsys.readouterr()
    assert main(["predict", str(seg_model), *base, "--out", str(tmp_path / "x"), "--jobs", "0"]) == 2
    assert "expected a positive integer" in capsys.readouterr().err


@pytest.mark.slow
def test_predict_again_resumes_and_a_new_model_redoes(seg_model, cgh_dir, tmp_path, capsys):
    out = tmp_path / "pred"
    args = ["predict", str(seg_model), "--profiles", str(cgh_dir / "profiles.csv"), "--out", str(out)]
    assert main(args) == 0
    before = (out / "breaks.csv").read_text()
    capsys.readouterr()
    assert main(args) == 0
    assert "6 already done, skipped" in capsys.readouterr().err
    assert (out / "breaks.csv").read_text() == before
    flat = model_with(seg_model, tmp_path / "flat.model", penalty=1e9)
    assert main(["predict", str(flat), "--profiles", str(cgh_dir / "profiles.csv"), "--out", str(out), "-q"]) == 0
    assert read_csv(out / "breaks.csv") == []  # a huge penalty: no change anywhere


@pytest.mark.slow
def test_evaluate_counts_false_positives_and_negatives_exactly(seg_model, cgh_dir, tmp_path, capsys):
    profiles, annotations = str(cgh_dir / "profiles.csv"), str(cgh_dir / "annotations.csv")
    # the trained model gets every label right
    assert main(["evaluate", str(seg_model), "--profiles", profiles, "--annotations", annotations]) == 0
    out = capsys.readouterr().out
    assert "label error: 0/9 = 0.00 % (FP 0, FN 0) over 6 sequences" in out
    # no change anywhere: every 1breakpoint region (3) is a false negative
    flat = model_with(seg_model, tmp_path / "flat.model", penalty=1e9)
    table = tmp_path / "table.csv"
    assert main(["evaluate", str(flat), "--profiles", profiles, "--annotations", annotations, "--out", str(table),
                 "--summary", "-q"]) == 0
    assert "label error: 3/9 = 33.33 % (FP 0, FN 3)" in capsys.readouterr().out
    rows = read_csv(table)
    assert rows[-1]["profile.id"] == "overall" and (rows[-1]["fp"], rows[-1]["fn"]) == ("0", "3")
    assert {(r["profile.id"], r["chromosome"], r["fn"]) for r in rows[:-1]} == {
        (p, c, "1" if ch is not None else "0") for (p, c), ch in LAYOUT.items()}
    # a change between every two probes: every region is a false positive
    busy = model_with(seg_model, tmp_path / "busy.model", penalty=0.0)
    assert main(["evaluate", str(busy), "--profiles", profiles, "--annotations", annotations, "--summary"]) == 0
    assert "label error: 9/9 = 100.00 % (FP 9, FN 0)" in capsys.readouterr().out


def test_a_model_for_another_task_is_refused(seg_model, cgh_dir, tmp_path, capsys):
    other = model_with(seg_model, tmp_path / "align.model", task="alignment")
    code = main(["predict", str(other), "--profiles", str(cgh_dir / "profiles.csv"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "alignment" in err and "segmentation model" in err
    code = main(["evaluate", str(other), "--profiles", str(cgh_dir / "profiles.csv"),
                 "--annotations", str(cgh_dir / "annotations.csv")])
    assert code == 2 and "needs a segmentation model" in capsys.readouterr().err
    code = main(["align", "--score", str(seg_model), "--audio", str(seg_model), "--model", str(seg_model),
                 "--out", str(tmp_path / "a.csv")])
    assert code == 2 and "needs an alignment model" in capsys.readouterr().err


def test_folder_with_an_unreadable_file_skips_it_lists_it_and_exits_1(seg_model, tmp_path, capsys):
    folder = tmp_path / "data"
    write_cgh(folder / "good", seed=3)
    (folder / "broken.csv").write_text("profile.id,chromosome,position,logratio\n1,1,oops,0.5\n")
    (folder / "README").write_text("not data")
    (folder / "garbage.csv.gz").write_bytes(b"\x1f\x8b\x08\x00truncated")
    out = tmp_path / "pred"
    code = main(["predict", str(seg_model), str(folder), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1
    assert "2 items failed" in err and "broken.csv" in err and "garbage.csv.gz" in err
    assert "ignoring" in err and "README" in err
    # the good table (and its annotation table, which is not a profile table) did not stop the run
    breaks = read_csv(out / "breaks.csv")
    assert {(r["profile.id"], r["chromosome"]) for r in breaks} == {k for k, c in LAYOUT.items() if c is not None}


def test_a_sequence_that_fails_is_reported_and_the_others_are_written(seg_model, tmp_path, capsys):
    folder = tmp_path / "mixed"
    folder.mkdir()
    rows = ["profile.id,chromosome,position,logratio"]
    rows += [f"7,1,{i * 1000},{0.1 * (i % 3)}" for i in range(40)]
    rows += [f"7,2,{i * 1000},{0.1 * (i % 2)},extra" for i in range(1)]  # malformed line: whole file unreadable
    (folder / "p.csv").write_text("\n".join(rows) + "\n")
    code = main(["predict", str(seg_model), str(folder / "p.csv"), "--out", str(tmp_path / "o"), "-q"])
    assert code == 1
    assert "p.csv" in capsys.readouterr().err


@pytest.mark.slow
def test_console_script_runs_as_a_subprocess(seg_model, cgh_dir, tmp_path):
    script = Path(sys.executable).with_name("marginalia-cli")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "marginalia.cli"]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[3]))
    out = tmp_path / "sub"
    proc = subprocess.run(cmd + ["predict", str(seg_model), "--profiles", str(cgh_dir / "profiles.csv"),
                                 "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "items/s" in proc.stderr  # plain progress lines: stderr is a pipe
    assert "\r" not in proc.stderr
    assert len(read_csv(out / "breaks.csv")) == 3
    bad = subprocess.run(cmd + ["predict"], capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


@pytest.mark.slow
@pytest.mark.parametrize("learner", ["perceptron", "partial"])
def test_other_learners_train_a_usable_model(learner, cgh_dir, tmp_path, capsys):
    from marginalia.models.files import load_model
    out = tmp_path / f"{learner}.model"
    assert main(["train", "--task", "segmentation", "--profiles", str(cgh_dir / "profiles.csv"),
                 "--annotations", str(cgh_dir / "annotations.csv"), "--out", str(out), "--learner", learner,
                 "--max-iter", "3", "--features", "raw", "-q"]) == 0
    m = load_model(out, task="segmentation")
    assert m.provenance["learner"] == learner and m.features == "cgh-logratio" and m.model.n_features_ == 1
    assert main(["evaluate", str(out), "--profiles", str(cgh_dir / "profiles.csv"), "--annotations",
                 str(cgh_dir / "annotations.csv"), "--summary", "-q"]) == 0
    assert "over 6 sequences" in capsys.readouterr().out


def test_plain_recipe_keeps_the_one_penalty_model(cgh_dir, tmp_path):
    from marginalia.models.files import load_model
    out = tmp_path / "plain.model"
    assert main(["train", "--task", "segmentation", "--profiles", str(cgh_dir / "profiles.csv"),
                 "--annotations", str(cgh_dir / "annotations.csv"), "--out", str(out), "--recipe", "plain",
                 "--max-iter", "3", "-q"]) == 0
    m = load_model(out, task="segmentation")
    assert m.features == "cgh-hermite" and m.penalty_law() is None and "penalty_law" not in m.provenance


@pytest.mark.slow
def test_the_penalty_laws_metric_can_be_chosen_and_is_recorded(cgh_dir, tmp_path, capsys):
    m = _trained_on_the_demo(cgh_dir, tmp_path / "logratio.model", "--law-metric", "logratio")
    assert "all on the plain logratio" in capsys.readouterr().err
    assert m.provenance["learner_params"]["law_metric"] == "logratio"
    assert m.provenance["learner_params"]["law_metric_margin"] == 2     # what "auto" would have required
    seg = m.penalty_law()
    assert set(seg.law_metrics_.values()) == {"logratio"}
    seqs = read_profiles(cgh_dir / "profiles.csv")
    assert all(seg.own_w(s) is not None and m.segment(s) == seg.segment(s) for s in seqs)


def test_recipe_refuses_plain_model_options(cgh_dir, tmp_path, capsys):
    code = main(["train", "--task", "segmentation", "--profiles", str(cgh_dir / "profiles.csv"),
                 "--annotations", str(cgh_dir / "annotations.csv"), "--out", str(tmp_path / "m.model"),
                 "--recipe", "penalty-law", "--learner", "perceptron", "-q"])
    assert code == 2 and "--recipe plain" in capsys.readouterr().err


@pytest.mark.slow
def test_recipe_model_predicts_like_the_in_process_recipe(seg_model, cgh_dir, tmp_path):
    """The CLI model file carries the whole recipe: its breaks equal CghSegmenter.segment in process."""
    from marginalia.cgh.recipe import fit_cgh_recipe
    from marginalia.io.cgh import read_annotations
    from marginalia.models.files import load_model
    seqs = read_profiles(cgh_dir / "profiles.csv")
    labels = {}
    for lab in read_annotations(cgh_dir / "annotations.csv", seqs):
        labels.setdefault(lab.item_id, []).append(lab)
    train = [s for s in seqs if s.name in labels]
    seg = fit_cgh_recipe(train, [labels[s.name] for s in train], max_iter=10, random_state=0)
    m = load_model(seg_model, task="segmentation")
    for s in seqs:
        assert m.segment(s).changes.tolist() == seg.segment(s).changes.tolist()


def test_a_damaged_penalty_law_is_refused_on_load(seg_model, tmp_path):
    import json

    import numpy as np

    from marginalia.exceptions import DataFormatError
    from marginalia.models.files import load_model
    with np.load(seg_model) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays["header"].tobytes().decode("utf-8"))
    header["provenance"]["penalty_law"]["recipe"] = "cgh-penalty-law/99"
    arrays["header"] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    bad = tmp_path / "bad.model"
    with open(bad, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(DataFormatError, match="penalty law"):
        load_model(bad)


@pytest.mark.slow
def test_skipped_and_repeated_annotation_rows_are_reported_as_warnings(cgh_dir, tmp_path, capsys):
    rows = (cgh_dir / "annotations.csv").read_text().splitlines()
    extra = tmp_path / "annotations.csv"
    pid, chrom = rows[1].split(",")[:2]
    beyond = [f"{pid},{chrom},900000000000,900000001000,{word}" for word in ("1breakpoint", "0breakpoints")]
    extra.write_text("\n".join(rows + [rows[1], "999,1,1,5000,0breakpoints"] + beyond) + "\n")
    out = tmp_path / "m.model"
    assert main(["train", "--task", "segmentation", "--profiles", str(cgh_dir / "profiles.csv"),
                 "--annotations", str(extra), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"marginalia-cli train: warning: {extra}: skipped 1 annotation row(s) naming sequences" in err
    assert "999:1" in err and f"dropped 1 row(s) repeating an earlier row exactly (lines {len(rows) + 1} (= line 2))" in err
    # rows whose region holds no probe (another genome build, say) cannot be learned from: named, not fatal
    assert f"dropped 1 rows whose region covers too few probes (lines {len(rows) + 3})" in err
    assert "dropped 1 no-change row(s) whose region covers no probe" in err and f"(lines {len(rows) + 4})" in err
    from marginalia.models.files import load_model
    assert load_model(out).provenance["n_labels"] == 9   # the repeat is not counted twice


@pytest.mark.slow
def test_unwritable_or_wrong_kind_of_out_is_refused_before_any_work(seg_model, cgh_dir, tmp_path, capsys):
    profiles, annotations = str(cgh_dir / "profiles.csv"), str(cgh_dir / "annotations.csv")
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.csv").write_text("x\n")
    train = ["train", "--task", "segmentation", "--profiles", profiles, "--annotations", annotations, "--out"]
    assert main(train + [str(tmp_path / "folder")]) == 2
    assert "is a folder; give a file name" in capsys.readouterr().err
    assert not list((tmp_path / "folder").iterdir())            # no half-written model left behind
    assert main(["predict", str(seg_model), "--profiles", profiles, "--out", str(tmp_path / "file.csv")]) == 2
    assert "is a file; this command writes a folder" in capsys.readouterr().err
    assert main(["predict", str(seg_model), "--profiles", str(tmp_path / "folder"), "--out", str(tmp_path / "p")]) == 2
    assert "is a folder; expected a file" in capsys.readouterr().err
    # a missing parent folder is made, as for every --out
    assert main(train + [str(tmp_path / "new" / "m.model")]) == 0 and (tmp_path / "new" / "m.model").is_file()


def test_contradictory_annotations_are_named_by_sequence_and_row_before_training(cgh_dir, tmp_path, capsys):
    rows = (cgh_dir / "annotations.csv").read_text().splitlines()
    pid, chrom, lo, hi, word = rows[1].split(",")
    other = "1breakpoint" if word == "0breakpoints" else "0breakpoints"
    bad = tmp_path / "annotations.csv"
    bad.write_text("\n".join(rows + [f"{pid},{chrom},{lo},{hi},{other}"]) + "\n")
    args = ["train", "--task", "segmentation", "--profiles", str(cgh_dir / "profiles.csv"), "--out",
            str(tmp_path / "m.model")]
    assert main(args + ["--annotations", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"the annotations of {pid}:{chrom} cannot all hold" in err and f"{float(lo):.0f}-{float(hi):.0f} bp" in err
    assert "passes" not in err                     # refused before any training
    assert main(args + ["--annotations", str(cgh_dir / "annotations.csv"), "--min-size", "100000"]) == 2
    assert "--min-size 100000 is longer than sequence" in capsys.readouterr().err


def test_predict_on_a_table_cut_short_warns_and_still_predicts(seg_model, cgh_dir, tmp_path, capsys):
    text = (cgh_dir / "profiles.csv").read_text()
    cut = tmp_path / "cut.csv"
    cut.write_text(text.rstrip("\n")[:-2])          # the last value loses its last digits and the line end
    assert main(["predict", str(seg_model), "--profiles", str(cut), "--out", str(tmp_path / "pred")]) == 0
    err = capsys.readouterr().err
    n_lines = text.rstrip("\n").count("\n") + 1
    assert f"marginalia-cli predict: warning: {cut}, line {n_lines}: the last line has no line end" in err
    assert "6 items predicted" in err


@pytest.mark.slow
def test_the_pruners_candidates_can_be_chosen_and_are_recorded(cgh_dir, tmp_path, capsys):
    m = _trained_on_the_demo(cgh_dir, tmp_path / "union.model", "--pruner-candidates", "union")
    assert "(+ over-segmentation's changes)" in capsys.readouterr().err
    assert m.provenance["learner_params"]["pruner_candidates"] == "union"
    assert m.provenance["penalty_law"]["recipe"] == "cgh-penalty-law/5"
    seg = m.penalty_law()
    assert set(seg.pruner_candidates_.values()) == {"union"}
    seqs = read_profiles(cgh_dir / "profiles.csv")
    assert all(m.segment(s) == seg.segment(s) for s in seqs)
    # despiking is on by default (recorded), and 0 turns it off: the pruners then read the logratio as measured
    from marginalia.cgh.change_pruning import SPIKE_THRESHOLD
    assert m.provenance["learner_params"]["spike_threshold"] == SPIKE_THRESHOLD == seg.pruning.spike_threshold
    m = _trained_on_the_demo(cgh_dir, tmp_path / "raw.model", "--pruner-candidates", "union", "--spike-threshold", "0")
    assert m.provenance["learner_params"]["spike_threshold"] is None
    assert m.provenance["penalty_law"]["recipe"] == "cgh-penalty-law/4" and m.penalty_law().pruning.spike_threshold is None
    capsys.readouterr()
    assert main(["train", "--task", "segmentation", "--profiles", str(cgh_dir / "profiles.csv"),
                 "--annotations", str(cgh_dir / "annotations.csv"), "--out", str(tmp_path / "raw.model"),
                 "--spike-threshold", "-1"]) == 2
    assert "--spike-threshold: expected a number >= 0, got '-1'" in capsys.readouterr().err
    assert main(["train", "--help"]) == 0
    assert f"(default {SPIKE_THRESHOLD:g};" in " ".join(capsys.readouterr().out.split())


@pytest.mark.slow
def test_the_laws_choose_their_margin_unless_one_is_imposed(cgh_dir, tmp_path, capsys):
    from marginalia.cgh.recipe import LAW_MARGINS
    from marginalia.models.files import load_model
    args = ["train", "--task", "segmentation", "--profiles", str(cgh_dir / "profiles.csv"),
            "--annotations", str(cgh_dir / "annotations.csv"), "--max-iter", "3"]
    chosen = tmp_path / "chosen.model"
    assert main([*args, "--out", str(chosen)]) == 0
    m = load_model(chosen, task="segmentation")
    laws = m.provenance["penalty_law"]["laws"]
    assert m.provenance["learner_params"]["law_margin"] == "auto"
    assert all(law["margin"] in LAW_MARGINS for law in laws.values())
    assert f"margin {laws['all']['margin']:g}" in capsys.readouterr().err
    fixed = tmp_path / "fixed.model"
    assert main([*args, "--out", str(fixed), "--law-margin", "0.75"]) == 0
    m = load_model(fixed, task="segmentation")
    assert m.provenance["learner_params"]["law_margin"] == 0.75
    assert {law["margin"] for law in m.provenance["penalty_law"]["laws"].values()} == {0.75}
    capsys.readouterr()
    assert main([*args, "--out", str(fixed), "--law-margin", "-1"]) == 2
    assert "--law-margin: expected a number >= 0, got '-1'" in capsys.readouterr().err
    assert main(["train", "--help"]) == 0
    listed = ", ".join(f"{m:g}" for m in LAW_MARGINS[:-1]) + f" and {LAW_MARGINS[-1]:g}"
    assert f"chooses among {listed} with its ridge" in " ".join(capsys.readouterr().out.split())


def _trained_on_the_demo(cgh_dir, out, *flags):
    """The segmentation model ``train --max-iter 3 FLAGS`` writes to ``out`` from the demo's profiles and labels."""
    from marginalia.models.files import load_model
    assert main(["train", "--task", "segmentation", "--profiles", str(cgh_dir / "profiles.csv"),
                 "--annotations", str(cgh_dir / "annotations.csv"), "--out", str(out), "--max-iter", "3",
                 *flags]) == 0
    return load_model(out, task="segmentation")


def _rename_columns(src, dst, header, sep=","):
    lines = Path(src).read_text().splitlines()
    dst.write_text("\n".join([header] + [sep.join(line.split(",")) for line in lines[1:]]) + "\n")
    return dst


@pytest.mark.slow
def test_predict_reads_other_layouts_and_writes_seg_and_bedgraph(seg_model, cgh_dir, tmp_path, capsys):
    std = tmp_path / "std"
    assert main(["predict", str(seg_model), "--profiles", str(cgh_dir / "profiles.csv"), "--out", str(std), "-q"]) == 0
    seg = (std / "segments.seg").read_text().splitlines()
    assert seg[0] == "ID\tchrom\tloc.start\tloc.end\tnum.mark\tseg.mean"
    segs = read_csv(std / "segments.csv")
    assert [ln.split("\t") for ln in seg[1:]] == [[r["profile.id"], r["chromosome"], r["first.position"],
                                                   r["last.position"], r["probes"], r["mean"]] for r in segs]
    bed = (std / "segments.bedGraph").read_text().splitlines()
    assert sum(ln.startswith("track") for ln in bed) == len({r["profile.id"] for r in segs})
    # the same table under names the reader recognises, and under names only --columns can map
    usual = _rename_columns(cgh_dir / "profiles.csv", tmp_path / "usual.tsv", "Sample\tChrom\tPos\tLog2Ratio", "\t")
    odd = _rename_columns(cgh_dir / "profiles.csv", tmp_path / "odd.csv", "tumour,arm,coord,ratio")
    assert main(["predict", str(seg_model), "--profiles", str(usual), "--out", str(tmp_path / "u"), "-q"]) == 0
    assert (tmp_path / "u" / "segments.seg").read_text() == "\n".join(seg) + "\n"
    assert main(["predict", str(seg_model), "--profiles", str(odd), "--out", str(tmp_path / "o"), "-q"]) == 1
    err = capsys.readouterr().err
    assert "['tumour', 'arm', 'coord', 'ratio']" in err and "--columns id=COL" in err
    assert main(["predict", str(seg_model), "--profiles", str(odd), "--columns",
                 "id=tumour,chromosome=arm,position=coord,logratio=ratio", "--out", str(tmp_path / "o"), "-q"]) == 0
    assert (tmp_path / "o" / "segments.seg").read_text() == "\n".join(seg) + "\n"
    assert main(["predict", str(seg_model), "--profiles", str(odd), "--columns", "position=coord",
                 "--out", str(tmp_path / "x"), "-q"]) == 2
    assert "--columns 'position=coord': logratio missing" in capsys.readouterr().err


@pytest.mark.slow
def test_train_and_evaluate_take_columns(cgh_dir, tmp_path, capsys):
    odd = _rename_columns(cgh_dir / "profiles.csv", tmp_path / "odd.csv", "tumour,arm,coord,ratio")
    spec = ["--columns", "id=tumour,chromosome=arm,position=coord,logratio=ratio"]
    model = tmp_path / "m.model"
    assert main(["train", "--task", "segmentation", "--profiles", str(odd), "--annotations",
                 str(cgh_dir / "annotations.csv"), *spec, "--out", str(model), "-q"]) == 0
    assert main(["evaluate", str(model), "--profiles", str(odd), "--annotations", str(cgh_dir / "annotations.csv"),
                 *spec, "--summary", "-q"]) in (0, 1)
    assert "labels" in capsys.readouterr().out
