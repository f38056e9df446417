"""ScorerRegistry: scorers and their versions, one JSON file each in a folder.

``create`` is not idempotent (each call makes a new ``slugify(name)-<8 hex>`` slug). A version is
made only when the config's SHA-256 changes. A version reference is its number, its id, an id
prefix of 8+ hex digits, or ``"latest"``/None. Files are written atomically under a lock file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping

from .._validate import json_value
from ..errors import ConfigError
from ._binding import ScorerBinding
from ._config import ScorerConfig
from ._scorer import Scorer, ScorerForm, ScorerVersion, make_slug

__all__ = ["ScorerNotFound", "ScorerRegistry"]

_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,80}$")
FILE_FORMAT = 1


class ScorerNotFound(ConfigError, LookupError):
    """No scorer (or no version of it) matches the reference given."""


def _is_number(ref: Any) -> bool:
    """A version number: an int, or a string of fewer than 8 digits (8+ hex digits are an id prefix)."""
    return isinstance(ref, int) and not isinstance(ref, bool) or (isinstance(ref, str) and ref.isdigit()
                                                                  and len(ref) < 8)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class ScorerRegistry:
    """A folder of scorers (``<slug>.json`` each). See the module doc for the rules."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError(f"scorer registry {self.path} exists and is not a folder")

    def _file(self, slug: str) -> Path:
        if not isinstance(slug, str) or not _SLUG.match(slug):
            raise ScorerNotFound(f"{slug!r} is not a scorer slug (like 'helpfulness-1a2b3c4d')")
        return self.path / f"{slug}.json"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.mkdir(parents=True, exist_ok=True)
        try:
            import fcntl
        except ImportError:  # no advisory locks on this platform: single writer assumed
            yield
            return
        with open(self.path / ".lock", "a") as fh:   # closing it releases the lock
            fcntl.flock(fh, fcntl.LOCK_EX)
            yield

    def _write(self, scorer: Scorer) -> None:
        record = {"format": FILE_FORMAT, "slug": scorer.slug, "name": scorer.name,
                  "description": scorer.description, "kind": scorer.kind,
                  "created_at": scorer.created_at, "updated_at": scorer.updated_at,
                  "versions": [v.to_dict() for v in scorer.history],
                  "current": scorer.version_number}
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
            os.replace(tmp, self._file(scorer.slug))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _read(self, path: Path) -> Scorer:
        try:
            data = json_value(path.read_text(encoding="utf-8"), path)
        except FileNotFoundError:
            raise ScorerNotFound(f"no scorer {path.stem!r} in {self.path}") from None
        if not isinstance(data, dict) or data.get("format") != FILE_FORMAT or not data.get("versions"):
            raise ConfigError(f"{path} is not a format-{FILE_FORMAT} scorer file")
        history = [ScorerVersion.from_dict(v) for v in data["versions"]]
        current = next((v for v in history if v.number == data.get("current")), history[-1])
        return Scorer(data["name"], current.config, data.get("description", ""), slug=data["slug"],
                      history=history, created_at=data.get("created_at"),
                      updated_at=data.get("updated_at"))

    def create(self, name: str, config: ScorerConfig | Mapping[str, Any],
               description: str = "") -> Scorer:
        """Save a new scorer (version 1) under a new slug and return it."""
        scorer = Scorer(name, config, description)
        now = _now()
        with self._locked():
            slug = make_slug(scorer.name)
            while self._file(slug).exists():  # 8 hex digits rarely collide; never overwrite
                slug = make_slug(scorer.name)
            scorer.slug = slug
            scorer.created_at = scorer.updated_at = now
            scorer.history = [ScorerVersion(scorer.version, 1, now, scorer.config)]
            self._write(scorer)
        return scorer

    def create_from_dict(self, data: Mapping[str, Any]) -> Scorer:
        """``create`` from the JSON form ``{"name", "description"?, "kind"?, "config"}``."""
        s = Scorer.from_dict(data)
        return self.create(s.name, s.config, s.description)

    def get(self, slug: str) -> Scorer:
        """The scorer with this slug, at its current version."""
        return self._read(self._file(slug))

    def list(self) -> list[Scorer]:
        """Every scorer, by slug."""
        if not self.path.is_dir():
            return []
        return [self._read(p) for p in sorted(self.path.glob("*.json"))]

    def find(self, name: str, *, exact: bool = False) -> list[Scorer]:
        """Scorers whose name contains ``name`` (case-insensitive), or equals it with ``exact``."""
        if not isinstance(name, str):
            raise ConfigError("find() takes a name string")
        q = name.casefold()
        return [s for s in self.list()
                if (s.name.casefold() == q if exact else q in s.name.casefold())]

    def update(self, slug: str, *, name: str | None = None, description: str | None = None,
               config: ScorerConfig | Mapping[str, Any] | None = None) -> Scorer:
        """Change name, description and/or config; a config whose hash differs makes a version."""
        with self._locked():
            scorer = self.get(slug)
            form = ScorerForm(name=scorer.name if name is None else name,
                              description=scorer.description if description is None else description,
                              config=scorer.config if config is None else config)
            scorer.name, scorer.description = form.name, form.description
            if form.config.version_id != scorer.version:
                number = max(v.number for v in scorer.history) + 1
                scorer.history.append(ScorerVersion(form.config.version_id, number, _now(), form.config))
                scorer.config = form.config
            scorer.updated_at = _now()
            self._write(scorer)
        return self.get(slug)

    def delete(self, slug: str) -> None:
        with self._locked():
            path = self._file(slug)
            if not path.exists():
                raise ScorerNotFound(f"no scorer {slug!r} in {self.path}")
            path.unlink()

    def versions(self, slug: str) -> list[ScorerVersion]:
        """Every version of the scorer, oldest first."""
        return list(self.get(slug).history)

    def version(self, slug: str, ref: int | str | None = None) -> ScorerVersion:
        """One version by number, id or id prefix (>= 8 hex); None/"latest" is the current one."""
        scorer = self.get(slug)
        history = scorer.history
        if ref is None or ref == "latest":
            return next(v for v in reversed(history) if v.id == scorer.version)
        if _is_number(ref):
            found = next((v for v in history if v.number == int(ref)), None)
            if found is None:
                raise ScorerNotFound(f"{slug} has no version {int(ref)} (versions 1..{len(history)})")
            return found
        if isinstance(ref, str) and len(ref) >= 8:
            matches = {v.id for v in history if v.id.startswith(ref.lower())}
            if len(matches) == 1:
                return next(v for v in reversed(history) if v.id in matches)
            if len(matches) > 1:
                raise ScorerNotFound(f"version prefix {ref!r} of {slug} is ambiguous; give more digits")
        raise ScorerNotFound(f"{slug} has no version {ref!r}; give a number, an id or an id prefix "
                             f"of 8+ hex digits")

    def bind(self, slug: str, mapping: Mapping[str, str] | None = None, *,
             version: int | str | None = None) -> ScorerBinding:
        """Pin a version (the current one by default) with a variable -> source mapping."""
        scorer = self.get(slug)
        v = self.version(slug, version)
        return ScorerBinding(v.config, mapping, scorer_name=scorer.name, scorer_slug=scorer.slug)
