"""Which PDFs a list of paths names: files as given, folders searched for `*.pdf`, each once.

The order is deterministic (the paths as given, each folder's entries by name, depth first), a
file reached twice (through a link, a repeated argument or an enclosing folder) is listed once,
and what cannot be ingested is listed with the one sentence that says why, in its place: a
missing path, a named file that is not a PDF, a folder that cannot be read, a symlink loop (a link
that leads to itself, or to a folder that holds the link), and a second file with a name this run
already ingests (documents are stored by file name, as `display_name` makes it safe). Links
between sibling folders are followed; a folder reached twice is searched once, so no walk goes
round. Folder entries are read as bytes, so a name that is not UTF-8 is found like any other.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from citerag.text.names import display_name

PDF_SUFFIX = ".pdf"


@dataclass(frozen=True)
class Found:
    path: Path  # as named or as reached inside a named folder (the document takes its name)
    problem: str = ""  # the sentence saying why it cannot be ingested; "" when it can

    @property
    def ok(self) -> bool:
        return not self.problem


def is_pdf_name(path: Path) -> bool:
    return path.name.lower().endswith(PDF_SUFFIX)


def discover_pdfs(paths: Sequence[Path]) -> list[Found]:
    """Every PDF the paths name or hold, and every named path that cannot be used."""
    walk = _Walk()
    for path in paths:
        walk.named(path)
    return walk.found


class _LinkLoop(Exception):
    """A symbolic link that leads back to itself."""


def _resolve(path: Path) -> Path:
    """The real path; FileNotFoundError when missing, _LinkLoop when links go round."""
    try:
        return path.resolve(strict=True)
    except RuntimeError:  # Python 3.11 reports a link loop this way
        raise _LinkLoop(str(path)) from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _LinkLoop(str(path)) from None
        raise


def _loop_sentence(path: Path, target: Path | None = None) -> str:
    where = f" (it leads back to {target})" if target is not None else ""
    return f"{path} is a symlink loop{where}; remove the link or point it at a real file or folder."


class _Walk:
    def __init__(self) -> None:
        self.found: list[Found] = []
        self._files: set[Path] = set()
        self._folders: set[Path] = set()
        self._names: dict[str, Path] = {}  # document name -> the path that claimed it

    def named(self, path: Path) -> None:
        """A path the user gave: a PDF, a folder, or a sentence saying why neither."""
        real = self._real(path, report_missing=True)
        if real is None:
            return
        if real.is_dir():
            self._folder(path, real)
        elif not real.is_file():
            self._problem(path, f"{path} is not a file; give the path of a PDF file.")
        elif not is_pdf_name(path):
            self._problem(
                path,
                f"{path} is not a PDF (its name does not end in .pdf); give PDF files or folders.",
            )
        else:
            self._file(path, real)

    def _folder(self, folder: Path, real: Path) -> None:
        if real in self._folders:
            return  # searched already, through another path
        self._folders.add(real)
        try:  # as bytes, which is what the OS holds: any name is read, in byte order
            with os.scandir(os.fsencode(folder)) as entries:
                names = sorted(entry.name for entry in entries)
        except OSError as error:
            self._problem(folder, _unreadable(folder, error, "folder"))
            return
        for name in names:
            self._entry(folder / os.fsdecode(name), real)

    def _entry(self, path: Path, folder: Path) -> None:
        """Something inside a named folder: searched when a folder, kept when a PDF."""
        real = self._real(path, report_missing=is_pdf_name(path))  # a link to a PDF now gone
        if real is None:
            return
        if real == folder or real in folder.parents:  # a folder holding this very link
            self._problem(path, _loop_sentence(path, real))
        elif real.is_dir():
            self._folder(path, real)
        elif real.is_file() and is_pdf_name(path):
            self._file(path, real)

    def _real(self, path: Path, report_missing: bool) -> Path | None:
        """The real path, or None once what stands in the way is reported."""
        try:
            return _resolve(path)
        except _LinkLoop:
            self._problem(path, _loop_sentence(path))
        except FileNotFoundError:
            if report_missing:
                self._problem(path, f"{path} does not exist; check the path and try again.")
        except OSError as error:
            self._problem(path, _unreadable(path, error))
        return None

    def _file(self, path: Path, real: Path) -> None:
        if real in self._files:
            return
        self._files.add(real)
        first = self._names.setdefault(display_name(path.name), path)
        if first != path:
            self._problem(
                path,
                f"{path} has the same file name as {first}, which this run ingests; documents "
                "are stored by file name, so rename one of them.",
            )
            return
        self.found.append(Found(path))

    def _problem(self, path: Path, sentence: str) -> None:
        self.found.append(Found(path, sentence))


def _unreadable(path: Path, error: OSError, kind: str = "") -> str:
    reason = error.strerror or str(error)
    subject = f"{kind.capitalize()} {path}" if kind else str(path)
    return f"{subject} cannot be read ({reason}); check its permissions and try again."
