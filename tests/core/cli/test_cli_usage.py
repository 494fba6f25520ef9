"""Usage errors exit 2 with one clear line; --help explains each subcommand with examples."""

import pytest

from marginalia.cli import build_parser, main

SUBCOMMANDS = ["train", "predict", "align", "evaluate", "query", "export", "history", "restore", "batch"]


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_no_command_prints_help_and_exits_2(capsys):
    code, _, err = run(capsys, [])
    assert code == 2 and "COMMAND" in err


@pytest.mark.slow
@pytest.mark.parametrize("argv,needle", [
    (["frobnicate"], "invalid choice"),
    (["predict", "m.model"], "--out"),
    (["train", "--out", "m.model", "--C", "-1"], "--C"),
    (["train", "--out", "m.model", "--max-iter", "zero"], "--max-iter"),
    (["train", "--out", "m.model"], "nothing to train from"),
    (["train", "p.marginalia", "--task", "segmentation", "--out", "m.model"], "not both"),
    (["train", "--task", "segmentation", "--profiles", "p.csv", "--out", "m.model"], "--annotations"),
    (["train", "--task", "alignment", "--out", "m.model"], "--pairs"),
    (["evaluate", "--alignment", "a.csv"], "--truth"),
    (["evaluate"], "MODEL --profiles"),
    (["query", "missing.marginalia", "-n", "0"], "-n"),
    (["export", "p.marginalia", "--format", "pdf", "--out", "x"], "invalid choice"),
    (["batch"], "subcommand"),
    (["batch", "predict", "missing.model", "--out", "o"], "no such model"),
    (["predict", "missing.model", "--profiles", __file__, "--out", "o"], "no such model"),
    (["align", "--score", "missing.mid", "--audio", "missing.wav", "--out", "o.csv"], "no such file"),
])
def test_usage_errors_exit_2_with_one_line(capsys, argv, needle):
    code, _, err = run(capsys, argv)
    assert code == 2
    assert needle in err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("marginalia-cli")


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommand_has_help_with_examples(capsys, command):
    code, out, _ = run(capsys, [command, "--help"])
    assert code == 0
    assert "examples:" in out and f"marginalia-cli {command}" in out


def _train_groups():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")  # argparse has no public accessor
    train = sub.choices["train"]
    return {g.title: {a.option_strings[-1] if a.option_strings else a.dest for a in g._group_actions}
            for g in train._action_groups}


def test_train_flags_are_grouped_and_the_research_knobs_are_apart(capsys):
    groups = _train_groups()
    assert groups["options"] == {"--help", "--debug", "--quiet"}
    assert groups["input"] == {"project", "--task", "--profiles", "--annotations", "--columns", "--position-unit",
                               "--pairs", "--kind"}
    assert groups["output"] == {"--out"}
    assert {"--recipe", "--learner", "--C", "--max-iter", "--seed"} <= groups["model"]
    assert groups["advanced (research)"] == {"--metric-learner", "--rho", "--no-prune", "--law-metric",
                                             "--pruner-candidates", "--law-margin", "--spike-threshold"}
    assert main(["train", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.index("\ninput:") < out.index("\noutput:") < out.index("\nmodel:") < out.index("\nadvanced (research):")


def test_top_level_help_lists_every_subcommand(capsys):
    code, out, _ = run(capsys, ["--help"])
    assert code == 0
    for command in SUBCOMMANDS:
        assert command in out


def test_predict_input_that_does_not_exist_is_a_usage_error(capsys, seg_model, tmp_path):
    code, _, err = run(capsys, ["predict", str(seg_model), str(tmp_path / "nope.csv"), "--out", str(tmp_path / "o")])
    assert code == 2 and "no such file or folder" in err


def test_unsupported_input_file_is_a_usage_error(capsys, seg_model, tmp_path):
    odd = tmp_path / "notes.docx"
    odd.write_text("x")
    code, _, err = run(capsys, ["predict", str(seg_model), str(odd), "--out", str(tmp_path / "o")])
    assert code == 2 and "unsupported file type" in err


def test_runtime_error_is_one_line_and_debug_shows_the_traceback(capsys, tmp_path):
    bad = tmp_path / "bad.model"
    bad.write_text("this is not json")
    argv = ["predict", str(bad), "--profiles", str(bad), "--out", str(tmp_path / "o")]
    code, _, err = run(capsys, argv)
    assert code == 1
    assert err.strip().splitlines() == [f"marginalia-cli predict: error: {bad}: not a Marginalia model file "
                                        "(expected the .npz archive written by `marginalia-cli train`)"]
    code, _, err = run(capsys, ["--debug"] + argv)
    assert code == 1 and "Traceback" in err


def test_parser_builds_without_opening_anything():
    parser = build_parser()
    args = parser.parse_args(["export", "p.marginalia", "--format", "bundle", "--out", "d"])
    assert args.kind == "bundle" and callable(args.run)


def test_interrupt_exits_130_with_a_resume_hint(capsys, monkeypatch):
    import marginalia.cli_commands.query as query

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(query, "run", interrupted)
    code, _, err = run(capsys, ["query", "p.marginalia"])
    assert code == 130 and "run the command again to resume" in err and "Traceback" not in err


def test_unexpected_error_is_one_line_asking_for_a_report(capsys, monkeypatch):
    import marginalia.cli_commands.query as query

    def broken(args):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(query, "run", broken)
    code, _, err = run(capsys, ["query", "p.marginalia"])
    assert code == 1
    assert err.strip() == ("marginalia-cli query: internal error: RuntimeError: kaboom (run with --debug for the "
                           "traceback and report it)")


def test_inputs_pair_scores_with_audio_of_the_same_name(tmp_path):
    from marginalia.cli_commands._common import UsageError, discover_inputs
    (tmp_path / "a.wav").write_bytes(b"")
    (tmp_path / "a.mid").write_bytes(b"")
    (tmp_path / "b.flac").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "ann.csv").write_text("profile.id,chromosome,min,max,annotation\n")
    (tmp_path / "p.csv").write_text("profile.id,chromosome,position,logratio\n")
    found = discover_inputs([tmp_path])
    assert found.audio == [(tmp_path / "a.wav", tmp_path / "a.mid"), (tmp_path / "b.flac", None)]
    assert found.profiles == [tmp_path / "p.csv"]
    assert sorted(p.name for p, _ in found.ignored) == ["ann.csv", "notes.txt"]
    # a score without its recording: skipped with its reason inside a folder, an error when named
    (tmp_path / "lonely.mid").write_bytes(b"")
    found = discover_inputs([tmp_path])
    assert ("lonely.mid", "a score with no recording named lonely.wav (or .flac, ...) next to it") in \
        [(p.name, why) for p, why in found.ignored]
    with pytest.raises(UsageError, match="lonely.mid' has no audio recording"):
        discover_inputs([tmp_path / "lonely.mid"])
    # audio in a folder given to an aCGH model is skipped; named on the command line it is an error
    assert [a.name for a in found.drop_audio_found_in_folders("wrong model")] == []
    assert found.audio == [] and ("b.flac", "wrong model") in [(p.name, why) for p, why in found.ignored]
    named = discover_inputs([tmp_path / "b.flac"])
    assert [a.name for a in named.drop_audio_found_in_folders("wrong model")] == ["b.flac"]
