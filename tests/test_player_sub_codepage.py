"""``alpha2 play --sub-codepage CP`` names how subtitle text that is not UTF-8 is read, as mpv's does
(auto by default: detected); the window opens its tracks with it and ``--sub FILE`` is checked with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from alpha2.apps.cli import main


def _options(argv: list[str]) -> object:
    import argparse

    from alpha2.apps import player

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    player.register(sub)
    args = parser.parse_args(["play", *argv])
    return player.options_from_args(args)


def test_the_codepage_reaches_the_options() -> None:
    assert _options(["clip.mp4"]).sub_codepage is None  # type: ignore[attr-defined]
    assert _options(["clip.mp4", "--sub-codepage", "auto"]).sub_codepage is None  # type: ignore[attr-defined]
    assert _options(["clip.mp4", "--sub-codepage", "cp1251"]).sub_codepage == "cp1251"  # type: ignore[attr-defined]
    assert _options(["clip.mp4", "--sub-codepage", "+cp1250"]).sub_codepage == "+cp1250"  # type: ignore[attr-defined]


def test_an_unknown_codepage_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["play", "clip.mp4", "--sub-codepage", "klingon"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--sub-codepage" in err and "'klingon' is not a text encoding" in err, err


def test_the_window_opens_its_subtitles_with_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from types import SimpleNamespace

    from alpha2.api import subtitles
    from alpha2.api.playback import PlayOptions
    from alpha2.apps import window

    seen: dict[str, object] = {}

    def fake_open(source: object, **kwargs: object) -> str:
        seen.update(kwargs)
        return "tracks"

    monkeypatch.setattr(subtitles, "open_subtitles", fake_open)
    fake = SimpleNamespace(
        _subtitles_opened=False,
        player=SimpleNamespace(source=str(tmp_path / "clip.mp4"), options=PlayOptions(sub_codepage="cp1251")),
    )
    window_class = next(
        cls for cls in vars(window).values() if isinstance(cls, type) and hasattr(cls, "_open_subtitles")
    )
    window_class._open_subtitles(fake)  # type: ignore[arg-type]
    assert seen["codepage"] == "cp1251" and fake.subtitles == "tracks", seen
