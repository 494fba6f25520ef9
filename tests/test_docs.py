"""The documentation's Python examples run as written (doctests of every docs page, in an empty folder).

Each page is one doctest, so its examples share names in page order, as a reader running them one after
another would. Examples use the embedded demo and must stay fast (seconds).
"""

import doctest
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*") if p.suffix in (".md", ".rst") and "_build" not in p.parts)


def _examples(page: pathlib.Path):
    text = page.read_text(encoding="utf-8")
    name = str(page.relative_to(ROOT))
    return doctest.DocTestParser().get_doctest(text, {}, name, str(page), 0)


def test_the_docs_have_examples():
    assert sum(len(_examples(p).examples) for p in PAGES) >= 10


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if _examples(p).examples], ids=lambda p: p.relative_to(DOCS).as_posix())
def test_docs_page_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    test = _examples(page)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"{runner.failures} example(s) of {test.name} failed (output above)"


def test_readme_stays_a_two_minute_read():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    for local in ("../shared", "issue #", "this 2-core machine"):
        assert local not in text, f"the README mentions {local!r}: keep such details in docs/research"
