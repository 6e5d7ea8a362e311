"""Language codes as mpv matches them: a stream's ISO 639 tag against a code asked for in any of its
forms (``de``, ``deu`` and ``ger`` alike; pycountry's table). ``alpha2 play --alang`` picks the track it
hears by it, ``alpha2 transcode --audio-track`` / ``--subtitle-track`` the streams they keep."""

from __future__ import annotations

__all__ = ["language_codes", "language_matches"]


def language_codes(code: str) -> frozenset[str]:
    """Every ISO 639 code of the language ``code`` names (``de``: de, deu, ger), as mpv matches
    ``--alang`` against the tracks' tags (pycountry's table); the code alone where it names none."""
    import pycountry

    code = code.lower()
    found = (
        pycountry.languages.get(alpha_2=code)
        if len(code) == 2
        else pycountry.languages.get(alpha_3=code) or pycountry.languages.get(bibliographic=code)
    )
    if found is None:
        return frozenset({code})
    names = {code, found.alpha_3}
    for other in ("alpha_2", "bibliographic"):
        if getattr(found, other, None):
            names.add(str(getattr(found, other)))
    return frozenset(names)


def language_matches(tag: str | None, code: str) -> bool:
    """Whether a stream tagged ``tag`` (None: untagged) is in the language ``code`` names, in any of
    its ISO 639 codes (:func:`language_codes`)."""
    return bool(tag) and str(tag).strip().lower() in language_codes(code)
