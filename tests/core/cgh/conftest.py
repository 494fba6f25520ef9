"""Every test of the copy-number recipe starts with no remembered penalty-grid decoding."""

import pytest

from marginalia.cgh.penalty_law import clear_grid_cache


@pytest.fixture(autouse=True)
def _fresh_grid_cache():
    clear_grid_cache()
    yield
    clear_grid_cache()
