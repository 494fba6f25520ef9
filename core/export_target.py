"""Where an export may write: a new name, an empty folder, or its own previous export, nothing else.

An export never deletes or overwrites what it did not create:

* a folder export (a bundle, one file per audio item) goes into a new or an empty folder; a
  folder holding anything else is refused, except a previous Marginalia export when the caller
  passes ``force`` — recognised by its manifest (``manifest.json`` of a bundle, or
  :data:`MARKER` for the other folder kinds) and only if every file in it is one the manifest
  lists;
* a file export goes to a new name (or an empty file); with ``force`` it replaces a file that
  already holds the same kind of export (recognised by its first bytes), never another file.

Writing is all-or-nothing: a folder is filled under a hidden name beside it
(``.NAME.partial-PID-XXXX``) and renamed into place; a file goes through
:func:`marginalia.atomic.publish`. Leftovers of a killed export (partial folders, a previous
export set aside, temporary files) whose process is gone are removed by the next export to the
same place. The user's folder is never re-moded: a new folder gets the umask's mode, an empty
one keeps its own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .atomic import folder_writable, publish
from .exceptions import UsageError
from .text import with_article

__all__ = ["ExportTarget", "check_target", "publish_export_folder", "publish_export_file", "own_files",
           "clean_leftovers", "MARKER", "FILE_SIGNATURES"]

#: manifest of a folder export that is not a bundle (a bundle has its ``manifest.json``)
MARKER = "marginalia-export.json"
MARKER_FORMAT = "marginalia-export"

#: how the first bytes of a file export start, per kind (recognises a previous export)
FILE_SIGNATURES = {
    "annotations-csv": (b"profile.id,chromosome,min,max,annotation",),
    "segments-csv": (b"profile.id,chromosome,first.position,last.position,probes,mean",
                     b"profile.id,chromosome,chromStart,chromEnd,mean"),
    "seg": (b"ID\tchrom\tloc.start\tloc.end\tnum.mark\tseg.mean",),
    "breaks-csv": (b"profile.id,chromosome,position",),
    "bedgraph": (b"track type=bedGraph",),
    "cgh-model": (b"PK\x03\x04",),
    "sync-model": (b"PK\x03\x04",),
}


@dataclass(frozen=True)
class ExportTarget:
    """What an export to ``path`` will do.

    Attributes
    ----------
    path : Path
    layout : {"file", "folder"}
    action : {"create", "replace"}
        ``create``: nothing is there yet (or an empty file or folder); ``replace``: a previous
        export of Marginalia is there and will be replaced as a whole.
    """

    path: Path
    layout: str
    action: str

    def describe(self) -> str:
        """One sentence saying what the export will do (for a dialog)."""
        what = "folder" if self.layout == "folder" else "file"
        if self.action == "replace":
            return f"The previous Marginalia export in {self.path} will be replaced; nothing else is touched."
        if self.path.exists():
            return f"The export will be written into the empty {what} {self.path}."
        return f"A new {what} {self.path} will be created."


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _refuse(path: Path, reason: str) -> UsageError:
    return UsageError(f"export to {str(path)!r}: {reason}")


def own_files(folder: Path) -> Optional[set]:
    """Relative paths (files and folders) a previous export in ``folder`` recorded; None if it is not one."""
    folder = Path(folder)
    for name, fmt in (("manifest.json", "marginalia-bundle"), (MARKER, MARKER_FORMAT)):
        m = folder / name
        if not m.is_file() or m.is_symlink():
            continue
        try:
            if m.stat().st_size > 64 * 2 ** 20:
                return None
            data = json.loads(m.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            return None
        if not isinstance(data, dict) or data.get("format") != fmt:
            continue
        listed = set()
        files = data.get("files")
        if isinstance(files, list):
            listed.update(f for f in files if isinstance(f, str))
        elif fmt == "marginalia-bundle":    # bundles written before the list: derive it from the manifest
            for item in data.get("items") or []:
                if isinstance(item, dict) and isinstance(item.get("features"), str):
                    listed.add(item["features"])
            for model in data.get("models") or []:
                if isinstance(model, dict) and isinstance(model.get("file"), str):
                    listed.add(model["file"])
        listed.add(name)
        out = set()
        for rel in listed:
            parts = Path(rel).parts
            if not parts or Path(rel).is_absolute() or ".." in parts:
                continue
            out.update(str(Path(*parts[:k])) for k in range(1, len(parts) + 1))
        return out
    return None


def _foreign(folder: Path, own: set) -> list:
    """Entries of ``folder`` (relative paths) a previous export did not write."""
    out = []
    for root, dirs, files in os.walk(folder):
        rel_root = Path(root).relative_to(folder)
        for name in sorted(dirs) + sorted(files):
            rel = str(rel_root / name) if str(rel_root) != "." else name
            full = Path(root) / name
            if rel not in own or (full.is_symlink()):
                out.append(rel)
        dirs[:] = [d for d in dirs if str(rel_root / d if str(rel_root) != "." else d) in own
                   and not (Path(root) / d).is_symlink()]
    return out


def _looks_like(kind: str, path: Path) -> bool:
    sigs = FILE_SIGNATURES.get(kind)
    if not sigs:
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return False
    head = head.lstrip(b"\xef\xbb\xbf")
    return any(head.startswith(s) for s in sigs)


def check_target(path, *, layout: str, kind: str, force: bool = False) -> ExportTarget:
    """Check, before any work, that an export of ``kind`` may write ``path``.

    Parameters
    ----------
    path : path-like
    layout : {"file", "folder"}
    kind : str
        The export kind (recognises a previous export of a file kind).
    force : bool
        Replace a previous Marginalia export found at ``path``.

    Returns
    -------
    ExportTarget

    Raises
    ------
    UsageError
        One line naming ``path``, why it cannot be written, and what to do instead.
    """
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_symlink():
        raise _refuse(p, "is a symbolic link; give the real path of a new or empty "
                         f"{'folder' if layout == 'folder' else 'file'}")
    if parent.exists() and not parent.is_dir():
        raise _refuse(p, f"{str(parent)!r} is a file, not a folder; choose a folder you can write to")
    if not parent.is_dir():
        raise _refuse(p, f"folder {str(parent)!r} does not exist; create it first")
    if not folder_writable(parent):
        raise _refuse(p, f"cannot write into folder {str(parent)!r}; choose a folder you can write to")
    if layout == "folder":
        if p.exists() and not p.is_dir():
            raise _refuse(p, f"--format {kind} writes a folder, but this is a file")
        if not p.exists():
            return ExportTarget(p, layout, "create")
        try:
            entries = os.listdir(p)
        except OSError as exc:
            raise _refuse(p, f"cannot read this folder ({exc.strerror or exc})") from None
        if not entries:
            return ExportTarget(p, layout, "create")
        own = own_files(p)
        if own is None:
            raise _refuse(p, f"the folder is not empty ({len(entries)} entries) and is not a Marginalia export; "
                             "nothing was written: choose a new or empty folder")
        if not force:
            raise _refuse(p, "the folder holds a previous Marginalia export; nothing was written: pass --force to "
                             "replace it, or choose a new folder")
        foreign = _foreign(p, own)
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise _refuse(p, f"the previous export here now also holds files it did not write ({shown}); nothing "
                             "was written: move them away or choose a new folder")
        return ExportTarget(p, layout, "replace")
    if p.is_dir():
        raise _refuse(p, f"--format {kind} writes a file, but this is a folder")
    if not p.exists():
        return ExportTarget(p, layout, "create")
    if not p.is_file():
        raise _refuse(p, "is not a regular file (a pipe or a device?); give a new file name")
    if p.stat().st_size == 0:
        return ExportTarget(p, layout, "create")
    if not force:
        raise _refuse(p, "the file exists; nothing was written: pass --force to replace a previous export, or "
                         "choose a new name")
    if not _looks_like(kind, p):
        raise _refuse(p, f"the file exists and is not {with_article(kind)} export of Marginalia; it was left alone: choose a "
                         "new name")
    return ExportTarget(p, layout, "replace")


_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<what>partial|old)-(?P<pid>\d+)-[^/]*$")
_TMPFILE = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.\d+\.tmp$")


def clean_leftovers(path) -> list:
    """Remove what killed exports to ``path`` left beside it; returns what was removed or restored.

    Only entries named as this module names them and whose process no longer runs are touched. A
    previous export set aside (``.NAME.old-…``) is put back when ``path`` is missing (the export
    was killed between its two renames), else removed.
    """
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    done = []
    try:
        names = os.listdir(parent)
    except OSError:
        return done
    for entry in names:
        m = _LEFTOVER.match(entry)
        if m and m["name"] == p.name and not _pid_alive(int(m["pid"])):
            full = parent / entry
            if full.is_symlink() or not full.is_dir():
                continue
            if m["what"] == "old" and not os.path.lexists(p):
                os.replace(full, p)
            elif m["what"] == "old":
                _remove_own(full)
            else:
                shutil.rmtree(full, ignore_errors=True)
            done.append(full)
            continue
        m = _TMPFILE.match(entry)
        if m and m["name"] == p.name and not _pid_alive(int(m["pid"])):
            full = parent / entry
            if full.is_file() and not full.is_symlink():
                full.unlink()
                done.append(full)
    return done


def _remove_own(folder: Path) -> None:
    """Delete the files a previous export listed, then its folders if empty; anything else stays."""
    own = own_files(folder) or set()
    for rel in sorted(own, key=lambda r: -len(Path(r).parts)):
        full = folder / rel
        try:
            if full.is_symlink() or full.is_file():
                full.unlink()
            elif full.is_dir():
                os.rmdir(full)
        except OSError:
            pass
    try:
        os.rmdir(folder)
    except OSError:
        pass


def _new_folder_mode(existing: Path) -> int:
    try:
        return existing.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o777 & ~mask


def publish_export_folder(target: ExportTarget, kind: str, write, *, force: bool = False) -> list:
    """Fill a new folder with ``write(tmp) -> [relative paths]`` and put it in place of ``target.path``.

    A :data:`MARKER` listing the files is added unless ``write`` made a bundle ``manifest.json``.
    ``target`` is checked again just before the rename (the folder may have changed meanwhile).
    Returns the written paths under ``target.path`` (none, and nothing made, when ``write`` wrote nothing).
    """
    folder = target.path
    clean_leftovers(folder)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.partial-{os.getpid()}-", dir=folder.parent))
    old = None
    try:
        os.chmod(tmp, _new_folder_mode(folder))
        names = [str(n) for n in write(tmp)]
        if not names:      # nothing to export: leave no empty folder behind
            return []
        if not (tmp / "manifest.json").is_file():
            (tmp / MARKER).write_text(json.dumps({"format": MARKER_FORMAT, "version": 1, "kind": kind,
                                                  "files": sorted(names)}, indent=1), encoding="utf-8")
        now = check_target(folder, layout="folder", kind=kind, force=force)
        if now.action == "replace":
            old = folder.with_name(f".{folder.name}.old-{os.getpid()}-{os.urandom(3).hex()}")
            os.replace(folder, old)
        try:
            os.replace(tmp, folder)   # over an empty folder, or a name set free just now
        except OSError as exc:
            if old is not None:
                os.replace(old, folder)
                old = None
            raise UsageError(f"export to {str(folder)!r}: cannot put the export in place ({exc.strerror or exc}); "
                             "nothing was changed") from None
        if old is not None:
            _remove_own(old)
            old = None
        return [folder / n for n in names]
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def publish_export_file(target: ExportTarget, kind: str, write, *, force: bool = False) -> list:
    """Write a file export through a temporary name (see :func:`marginalia.atomic.publish`)."""
    clean_leftovers(target.path)

    def checked(tmp):
        write(tmp)
        check_target(target.path, layout="file", kind=kind, force=force)   # still ours to write

    publish(target.path, checked)
    return [target.path]
