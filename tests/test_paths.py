"""The one cache-building step (``_paths.built_once``) that converted judges
and the recipes' policies share."""

from __future__ import annotations

from rewardjudge._paths import built_once


def test_built_once_builds_then_reuses_and_replaces_a_stale_partial_folder(tmp_path):
    calls = []

    def build(folder):
        calls.append(folder)
        (folder / "weights.bin").write_text("w")

    target = tmp_path / "model-abc"
    target.mkdir()
    (target / "half-written").write_text("x")      # a crash before the marker: not a cache
    assert built_once(target, build) == target
    assert (target / ".complete").is_file() and (target / "weights.bin").is_file()
    assert not (target / "half-written").exists()
    assert built_once(target, build) == target and len(calls) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["model-abc"]   # no temporary folder left


def test_built_once_takes_the_builds_own_marker(tmp_path):
    def build(folder):
        (folder / "config.json").write_text("{}")

    target = built_once(tmp_path / "conv", build, marker="config.json")
    assert not (target / ".complete").exists()
    assert built_once(target, lambda f: (_ for _ in ()).throw(AssertionError("rebuilt")), marker="config.json")
