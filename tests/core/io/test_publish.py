"""Atomic outputs: a failing writer leaves the previous file or folder exactly as it was."""

import pytest

from marginalia.atomic import publish
from marginalia.export_target import check_target, publish_export_folder


def publish_folder(out, write, force=True):
    def fill(tmp):
        write(tmp)
        return ["manifest.json", "features/a.npz"]
    target = check_target(out, layout="folder", kind="bundle", force=force)
    return publish_export_folder(target, "bundle", fill, force=force)


def test_a_failing_write_keeps_the_previous_file(tmp_path):
    out = tmp_path / "breaks.csv"
    publish(out, lambda p: p.write_text("old\n"))

    def half_then_fail(p):
        p.write_text("new, half writ")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        publish(out, half_then_fail)
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["breaks.csv"]


def test_a_failing_folder_export_keeps_the_previous_folder_whole(tmp_path):
    out = tmp_path / "bundle"

    def fill(version, fail=False):
        def write(folder):
            (folder / "manifest.json").write_text(
                '{"format": "marginalia-bundle", "v": "%s", "files": ["features/a.npz"]}' % version)
            (folder / "features").mkdir()
            if fail:
                raise KeyboardInterrupt       # killed half-way
            (folder / "features" / "a.npz").write_text(version)
        return write

    publish_folder(out, fill("v1"))
    with pytest.raises(KeyboardInterrupt):
        publish_folder(out, fill("v2", fail=True))
    assert '"v1"' in (out / "manifest.json").read_text() and (out / "features" / "a.npz").read_text() == "v1"
    publish_folder(out, fill("v2"))
    assert '"v2"' in (out / "manifest.json").read_text() and (out / "features" / "a.npz").read_text() == "v2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle"]     # no partial or old folder left
