"""Damaged input files end in success or a project exception naming the file: never a crash, a hang or damage.

Valid small files (aCGH profiles and annotations, WAV, FLAC, MIDI, a project)
are written in code, then mutated by hypothesis (bytes flipped, inserted,
deleted, smashed; truncation) and fed through the readers and the engine.
A refused import leaves the project it was imported into sound and its labels
unchanged; a damaged project is refused with :class:`ProjectDamagedError` (or
another project exception) and never rewritten.
"""

from __future__ import annotations

import faulthandler
import hashlib
import signal
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import soundfile
from hypothesis import given, settings
from hypothesis import strategies as st

from marginalia.engine import Engine
from marginalia.exceptions import MarginaliaError
from marginalia.io import load_audio, read_annotations, read_midi, read_profiles, write_midi, write_wav
from marginalia.types import MidiScore
from tests.reliability.engine_kill_child import make_profiles, new_project

CASE_DEADLINE_S = 10
EXAMPLES = 25
TRIED: dict = {}  # format -> fuzz cases run (printed by the last test of the module)
OUTCOMES: dict = {}  # (reader or engine call) -> [succeeded, refused]


class Hang(AssertionError):
    """A case ran past its deadline."""


@contextmanager
def deadline(seconds=CASE_DEADLINE_S, what="case"):
    """Fail with :class:`Hang` after ``seconds``; a hang that holds the GIL (a numba kernel) kills the
    process with a traceback after twice that, rather than blocking the whole test run."""
    def on_alarm(signum, frame):
        raise Hang(f"{what} did not finish within {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    faulthandler.dump_traceback_later(2 * seconds, exit=True)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        faulthandler.cancel_dump_traceback_later()


def test_the_deadline_guard_fails_a_hang():
    with pytest.raises(Hang, match="within 0.2 s"):
        with deadline(0.2, what="a busy loop"):
            while True:
                sum(range(1000))


# ------------------------------------------------------------------ mutations

# hypothesis starts from 0.0: shifting by the golden ratio puts its simplest cases mid-file, not on the header
_position = st.floats(0.0, 1.0, exclude_max=True).map(lambda p: (p + 0.6180339887) % 1.0)
# text-like bytes keep a mutated table parseable more often, so the readers' success paths are fuzzed too
_plausible = st.text(alphabet="0123456789,.-+eE\n\t\"N ", min_size=1, max_size=4).map(str.encode)
mutation = st.one_of(
    st.tuples(st.just("flip"), _position, st.integers(0, 7).map(lambda bit: 1 << bit)),
    st.tuples(st.just("insert"), _position, st.one_of(_plausible, st.binary(min_size=1, max_size=4))),
    st.tuples(st.just("delete"), _position, st.integers(1, 8)),
    st.tuples(st.just("smash"), _position, st.integers(1, 48), st.sampled_from([0x00, 0xFF, 0x2C, 0x0A, 0x31])),
    st.tuples(st.just("truncate"), _position),
    # a changed digit keeps a table well-formed but moves a region or a probe: the import paths past parsing
    st.tuples(st.just("digit"), _position, st.integers(0, 9)),
)
mutations = st.lists(mutation, min_size=1, max_size=3)


def mutate(data: bytes, ops) -> bytes:
    """Apply mutation ops (positions are fractions of the current length)."""
    b = bytearray(data)
    for op in ops:
        i = int(op[1] * len(b)) if b else 0
        if op[0] == "flip" and b:
            b[i] ^= op[2]
        elif op[0] == "insert":
            b[i:i] = op[2]
        elif op[0] == "delete":
            del b[i:i + op[2]]
        elif op[0] == "smash":
            b[i:i + op[2]] = bytes([op[3]]) * len(b[i:i + op[2]])
        elif op[0] == "truncate":
            del b[i:]
        elif op[0] == "digit":
            at = next((k for k in range(i, len(b)) if 0x30 <= b[k] <= 0x39), None)
            if at is not None:
                b[at] = 0x30 + op[2]
    return bytes(b)


# ------------------------------------------------------------------ valid files

def _score() -> MidiScore:
    pitches = [60, 64, 67, 65, 62]
    onsets = [0.0, 0.1, 0.2, 0.3, 0.4]
    return MidiScore(pitches=pitches, onsets_s=onsets, offsets_s=[t + 0.1 for t in onsets],
                 onsets_beats=[2 * t for t in onsets], offsets_beats=[2 * t + 0.2 for t in onsets],
                 velocities=[80] * 5, name="tune")


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    """Print how many cases each format and call saw (``pytest -s``)."""
    yield
    print("\nfuzz cases tried per format:", dict(sorted(TRIED.items())))
    print("outcomes [succeeded, refused]:", dict(sorted(OUTCOMES.items())))


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    """``{format: (file name, bytes)}`` of small valid files."""
    folder = tmp_path_factory.mktemp("valid")
    seqs = make_profiles(folder / "profiles.csv", seed=3)
    from marginalia.io import write_annotations
    from marginalia.types import RegionKind, RegionLabel
    labels = [RegionLabel(seqs[0].name, start=2, stop=20, kind=RegionKind.ZERO),
              RegionLabel(seqs[1].name, start=10, stop=40, kind=RegionKind.ONE)]
    write_annotations(folder / "annotations.csv", labels, seqs)
    rng = np.random.default_rng(0)
    t = np.arange(4000) / 8000
    y = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.01 * rng.standard_normal(t.size)
    write_wav(folder / "tune.wav", y, 8000)
    soundfile.write(str(folder / "tune.flac"), y, 8000, format="FLAC")
    write_midi(folder / "tune.mid", _score())
    out = {name: (name, (folder / name).read_bytes())
           for name in ("profiles.csv", "annotations.csv", "tune.wav", "tune.flac", "tune.mid")}
    project, _ = new_project(folder / "good.marginalia", seed=4)
    out["project"] = ("p.marginalia", project.read_bytes())
    return {"profiles": out["profiles.csv"], "annotations": out["annotations.csv"], "wav": out["tune.wav"],
            "flac": out["tune.flac"], "midi": out["tune.mid"], "project": out["project"]}, seqs, folder


@pytest.fixture(scope="module")
def engine(tmp_path_factory, valid):
    """One project the fuzzed files are imported into (its labels are checked after every case)."""
    path, _ = new_project(tmp_path_factory.mktemp("host") / "host.marginalia", seed=3)  # same profiles as the tables
    eng = Engine.open(path)
    # warm up audio feature extraction (librosa compiles its kernels on first use, seconds on a loaded
    # machine) outside the per-case deadline, which is about hangs, not first-call compilation
    warm = tmp_path_factory.mktemp("warm") / "tune.wav"
    warm.write_bytes(valid[0]["wav"][1])
    with Engine.create(warm.with_suffix(".marginalia")) as scratch:
        scratch.data(scratch.import_files([warm])[0])
    yield eng
    eng.close()


def _fuzzed(valid, fmt, ops, *, count=True) -> Path:
    name, data = valid[0][fmt]
    folder = Path(tempfile.mkdtemp(prefix=f"fuzz-{fmt}-", dir=valid[2]))  # under pytest's tmp, cleaned by it
    path = folder / name
    path.write_bytes(mutate(data, ops))
    if count:
        TRIED[fmt] = TRIED.get(fmt, 0) + 1
    return path


def _refused_properly(exc: BaseException, path: Path):
    assert isinstance(exc, MarginaliaError), f"{type(exc).__name__} is not a project exception: {exc!r}"
    text = str(exc)
    assert text.strip(), "the error has no message"
    assert path.name in text, f"the message does not name the file {path.name}: {text!r}"


def _attempt(fn, path: Path, what: str):
    """Run ``fn()``; returns (ok, result). A project exception must name ``path``; anything else fails."""
    with deadline(what=f"{what} on {path.name}"):
        tally = OUTCOMES.setdefault(what, [0, 0])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = fn()
        except Hang:
            raise
        except Exception as exc:  # noqa: BLE001 - the point is to classify every exception
            _refused_properly(exc, path)
            tally[1] += 1
            return False, None
        tally[0] += 1
        return True, result


def _state(eng):
    return sorted((lab.id, repr(lab)) for lab in eng.labels())


def _import_into(eng, path: Path, fn):
    before = _state(eng)
    ok, result = _attempt(fn, path, f"engine.{fn.__name__} ({path.suffix})")
    assert eng.session.integrity_check() == []
    if ok and fn.__name__ == "import_labels":
        assert _state(eng) == sorted(before + [(lab.id, repr(lab)) for lab in result])
    else:
        assert _state(eng) == before, "a refused (or item-only) import changed the labels"
    return ok


# ------------------------------------------------------------------ the cases

@pytest.mark.slow
def test_the_unmutated_files_are_accepted(valid, engine):
    """The harness itself: with no mutation every reader and import succeeds."""
    files, seqs, _ = valid
    assert [s.name for s in read_profiles(_fuzzed(valid, "profiles", [], count=False))] == [s.name for s in seqs]
    assert len(read_annotations(_fuzzed(valid, "annotations", [], count=False), seqs)) == 2
    assert len(engine.import_labels("annotations-csv", _fuzzed(valid, "annotations", [], count=False))) == 2
    for fmt in ("wav", "flac"):
        assert load_audio(_fuzzed(valid, fmt, [], count=False), sr=None)[0].shape == (4000,)
    midi = _fuzzed(valid, "midi", [], count=False)
    assert read_midi(midi).n_events == 5
    midi.with_suffix(".wav").write_bytes(files["wav"][1])
    assert len(engine.import_files([midi.with_suffix(".wav"), midi])) == 1
    with Engine.open(_fuzzed(valid, "project", [], count=False)) as eng:
        assert eng.session.integrity_check() == [] and len(eng.labels()) == 2


def _contradicting_table(valid) -> Path:
    """First row fine, second row contradicts the host's boundary label (``seed-1``, a change at probe 30)."""
    path = _fuzzed(valid, "annotations", [], count=False)
    path.write_text("profile.id,chromosome,min,max,annotation\n"
                    "p3,1,2000,10500,0breakpoints\n"
                    "p3,2,10000,20500,0breakpoints\n")
    return path


def test_a_table_contradicting_a_stored_label_is_refused_whole(valid, engine):
    path, before = _contradicting_table(valid), _state(engine)
    with pytest.raises(MarginaliaError):
        engine.import_labels("annotations-csv", path)
    assert _state(engine) == before and engine.session.integrity_check() == []


def test_the_refusal_of_a_contradicting_table_names_the_file(valid, engine):
    """The user must learn which file (and row) to fix: today the message names only random label ids."""
    path = _contradicting_table(valid)
    with pytest.raises(MarginaliaError) as info:
        engine.import_labels("annotations-csv", path)
    _refused_properly(info.value, path)


@settings(max_examples=EXAMPLES)
@given(ops=mutations)
def test_fuzzed_profiles_table(valid, engine, ops):
    path = _fuzzed(valid, "profiles", ops)
    ok, seqs = _attempt(lambda: read_profiles(path), path, "read_profiles")
    if ok:
        assert all(np.all(np.isfinite(s.values)) and np.all(np.diff(s.positions) >= 0) for s in seqs)

    def import_files():
        return engine.import_files([path])
    if _import_into(engine, path, import_files):
        new = engine.session.items()[-1].id
        _attempt(lambda: engine.sequence(new), path, "engine.sequence")


@settings(max_examples=EXAMPLES)
@given(ops=mutations)
def test_fuzzed_annotation_table(valid, engine, ops):
    path = _fuzzed(valid, "annotations", ops)
    seqs = valid[1]
    ok, labels = _attempt(lambda: read_annotations(path, seqs), path, "read_annotations")
    if ok:
        names = {s.name: s.n_samples for s in seqs}
        assert all(0 <= lab.start < lab.stop <= names[lab.item_id] for lab in labels)

    def import_labels():
        return engine.import_labels("annotations-csv", path)
    _import_into(engine, path, import_labels)


def _audio_case(valid, engine, fmt, ops):
    path = _fuzzed(valid, fmt, ops)
    ok, got = _attempt(lambda: load_audio(path, sr=None), path, f"load_audio ({path.suffix})")
    if ok:
        y, sr = got
        assert y.ndim == 1 and y.size > 0 and np.all(np.isfinite(y)) and sr > 0

    def import_files():
        return engine.import_files([path])
    if _import_into(engine, path, import_files) and OUTCOMES.get(f"engine.data ({path.suffix})", [0])[0] < 8:
        # loading computes the features (0.3 s each): a few suffice to show damaged audio loads or is refused
        new = engine.session.items()[-1].id
        _attempt(lambda: engine.data(new), path, f"engine.data ({path.suffix})")


@settings(max_examples=EXAMPLES)
@given(ops=mutations)
@pytest.mark.slow
def test_fuzzed_wav(valid, engine, ops):
    _audio_case(valid, engine, "wav", ops)


@pytest.mark.slow
@settings(max_examples=EXAMPLES)
@given(ops=mutations)
def test_fuzzed_flac(valid, engine, ops):
    _audio_case(valid, engine, "flac", ops)


@settings(max_examples=EXAMPLES)
@given(ops=mutations)
def test_fuzzed_midi(valid, engine, ops):
    path = _fuzzed(valid, "midi", ops)
    ok, score = _attempt(lambda: read_midi(path), path, "read_midi")
    if ok:
        assert np.all(np.isfinite(score.onsets_s)) and np.all(score.offsets_s >= score.onsets_s)
    wav = path.with_suffix(".wav")
    wav.write_bytes(valid[0]["wav"][1])

    def import_files():
        return engine.import_files([wav, path])
    _import_into(engine, path, import_files)


@settings(max_examples=EXAMPLES)
@given(ops=mutations)
def test_fuzzed_project_file(valid, ops):
    path = _fuzzed(valid, "project", ops)
    damaged = path.read_bytes()
    good_labels = valid_labels(valid)
    ok, eng = _attempt(lambda: Engine.open(path), path, "Engine.open")
    if ok:
        # damage the open-time check misses must at least not reach the labels (they carry checksums); damage
        # to an index is left to test_index_damage_is_noticed_on_open, which does not depend on the random bytes
        # of the generated project
        try:
            assert sorted(repr(lab) for lab in eng.labels()) == good_labels, "damage to labels went unnoticed"
        finally:
            eng.close()
    else:
        assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(damaged).digest(), \
            "a refused project file was modified"


def test_index_damage_is_noticed_on_open(tmp_path):
    """One letter changed inside an index entry: the b-tree stays well-formed, so ``PRAGMA quick_check`` (the
    open-time check) passes, but the index no longer matches its table -- ``integrity_check`` sees it. The
    project must be refused on open (a query through that index, e.g. the latest model of a task, would
    silently miss rows), not opened and reported damaged only by a later ``integrity_check``."""
    import sqlite3

    from marginalia.exceptions import ProjectDamagedError
    path, _ = new_project(tmp_path / "p.marginalia", seed=1)
    conn = sqlite3.connect(path)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'models_by_task'").fetchone()[0]
    conn.close()
    data = bytearray(path.read_bytes())
    at = data.index(b"segmentation", (root - 1) * page_size, root * page_size)
    data[at] = ord("S")
    path.write_bytes(bytes(data))
    try:
        eng = Engine.open(path)
    except ProjectDamagedError as exc:
        assert path.name in str(exc) and path.read_bytes() == bytes(data)
        return
    problems = eng.session.integrity_check()
    eng.close()
    assert not problems, f"Engine.open accepted a project whose integrity_check reports {problems}"


_GOOD_LABELS: dict = {}


def valid_labels(valid):
    if "labels" not in _GOOD_LABELS:
        folder = Path(tempfile.mkdtemp(prefix="fuzz-good-", dir=valid[2]))
        (folder / "p.marginalia").write_bytes(valid[0]["project"][1])
        with Engine.open(folder / "p.marginalia", read_only=True) as eng:
            _GOOD_LABELS["labels"] = sorted(repr(lab) for lab in eng.labels())
    return _GOOD_LABELS["labels"]
