"""The argument checks every public function shares: what they accept, refuse and say."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from marginalia.checks import (
    check_audio,
    check_bool,
    check_choice,
    check_int,
    check_sample_rate,
    check_scalar,
    check_signal,
    is_integer,
    is_number,
)
from marginalia.exceptions import ParameterError
from marginalia.io._common import is_number_text

BOUNDS = ["both", "left", "right", "neither"]


@pytest.mark.slow
@given(st.integers(-5, 5), st.one_of(st.none(), st.integers(-3, 3)), st.one_of(st.none(), st.integers(-3, 3)),
       st.sampled_from(BOUNDS))
def test_check_int_accepts_exactly_the_values_in_range(x, lo, hi, bounds):
    left_ok = lo is None or (x >= lo if bounds in ("both", "left") else x > lo)
    right_ok = hi is None or (x <= hi if bounds in ("both", "right") else x < hi)
    if left_ok and right_ok:
        assert check_int(np.int64(x), "n", min_val=lo, max_val=hi, include_boundaries=bounds) == x
    else:
        with pytest.raises(ParameterError, match=rf"^n: expected an integer.*, got {x}$"):
            check_int(x, "n", min_val=lo, max_val=hi, include_boundaries=bounds)


@pytest.mark.parametrize("bad", [True, False, 2.0, "3", None, np.float64(1.0)])
def test_check_int_refuses_bools_floats_and_strings(bad):
    with pytest.raises(ParameterError, match=r"min_size: expected an integer >= 1, got "):
        check_int(bad, "min_size", min_val=1)


def test_messages_name_the_range():
    with pytest.raises(ParameterError, match=r"^keep: expected an integer >= 1, got 0$"):
        check_int(0, "keep", min_val=1)
    with pytest.raises(ParameterError, match=r"^p: expected a finite number in \(0, 1\], got 0$"):
        check_scalar(0, "p", float, min_val=0, max_val=1, include_boundaries="right")
    with pytest.raises(ParameterError, match=r"^t: expected a number of seconds > 0, got -1$"):
        check_scalar(-1, "t", float, min_val=0, include_boundaries="neither", what="a number of seconds")
    with pytest.raises(ParameterError, match=r"^r: expected None or an integer >= 1, got 0$"):
        check_int(0, "r", min_val=1, what="None or an integer")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), True, "1.0", None])
def test_check_scalar_float_wants_a_finite_real(bad):
    with pytest.raises(ParameterError, match="threshold: expected a finite number"):
        check_scalar(bad, "threshold", float)
    assert check_scalar(np.int32(3), "threshold", float) == 3.0


def test_number_predicates_refuse_bools():
    assert is_number(1) and is_number(np.float32(0.5)) and not is_number(True) and not is_number(np.bool_(True))
    assert is_integer(np.uint8(3)) and not is_integer(3.0) and not is_integer(False)
    assert [is_number_text(t) for t in ("1e-3", " 2 ", "nan", "x", "")] == [True, True, True, False, False]


def test_check_bool():
    assert check_bool(np.bool_(True), "mono") is True
    with pytest.raises(ParameterError, match=r"^mono: expected True or False, got 1$"):
        check_bool(1, "mono")


def test_check_signal_shapes_length_and_finiteness():
    assert check_signal([[1.0], [2.0]], "x").tolist() == [1.0, 2.0]
    with pytest.raises(ParameterError, match=r"x: expected a 1-d signal of shape \(T,\) or \(T, 1\), got shape \(1, 2\)"):
        check_signal([[1.0, 2.0]], "x")
    assert check_signal([[1.0, 2.0]], "y", allow_row=True).shape == (2,)
    with pytest.raises(ParameterError, match="x: expected a 1-d signal of at least 3 samples, got 2"):
        check_signal([1.0, 2.0], "x", min_length=3)
    with pytest.raises(ParameterError, match="x: non-finite value .* at sample 1"):
        check_signal([0.0, np.nan], "x")
    with pytest.raises(ParameterError, match="x: expected a 1-d signal of numbers, got dict"):
        check_signal({}, "x")


def test_audio_checks():
    y, sr = check_audio(np.zeros((1, 8)), 22050.0)
    assert y.dtype == np.float32 and y.shape == (8,) and sr == 22050 and isinstance(sr, int)
    with pytest.raises(ParameterError, match=r"y: expected a mono signal .*; mix down first"):
        check_audio(np.zeros((2, 8)), 22050)
    with pytest.raises(ParameterError, match=r"sr: expected an integer sample rate in Hz in \[4000, 384000\], got 22050.5"):
        check_sample_rate(22050.5, min_val=4000, max_val=384000)
    with pytest.raises(ParameterError, match="sr: expected an integer sample rate in Hz >= 1, got True"):
        check_sample_rate(True)


def test_check_choice_names_every_option():
    assert check_choice("warn", "mode", ("error", "warn")) == "warn"
    with pytest.raises(ParameterError, match=r"^mode: expected 'error', 'warn' or 'skip', got 'Warn'$"):
        check_choice("Warn", "mode", ("error", "warn", "skip"))
    with pytest.raises(ParameterError, match=r"^sep: expected ',' or '\\t', got ';'$"):
        check_choice(";", "sep", (",", "\t"))

