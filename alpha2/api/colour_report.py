"""What the colour-managed pass did, for the player's and transcoder's ``--stats`` / ``--json``."""

from __future__ import annotations

from typing import Any

from alpha2.gpu.colour import ColourInfo, ColourMatrix, ColourRange
from alpha2.native_gpu.render.colour_params import ColourParams

__all__ = ["colour_report", "colour_summary", "guessed_notes", "plan_dict"]

_MATRIX_NAMES = {
    ColourMatrix.BT709: "BT.709",
    ColourMatrix.BT470BG: "BT.601",
    ColourMatrix.SMPTE170M: "BT.601",
    ColourMatrix.BT2020_NCL: "BT.2020",
}


def guessed_notes(colour: ColourInfo | None) -> list[str]:
    """What the source left untagged and what was taken instead (for the ``colour:`` line): ``matrix
    BT.709 guessed from the size (untagged)``, ``range limited, primaries BT709 assumed (untagged)``."""
    if colour is None or not colour.guessed:
        return []
    notes = []
    if "matrix" in colour.guessed:
        name = _MATRIX_NAMES.get(colour.matrix, colour.matrix.name)
        notes.append(f"matrix {name} guessed from the size (untagged)")
    assumed = []
    if "range" in colour.guessed:
        assumed.append(f"range {'limited' if colour.range is ColourRange.LIMITED else 'full'}")
    if "primaries" in colour.guessed:
        assumed.append(f"primaries {colour.primaries.name}")
    if "transfer" in colour.guessed:
        assumed.append(f"transfer {colour.transfer.name}")
    if assumed:
        notes.append(", ".join(assumed) + " assumed (untagged)")
    return notes


def plan_dict(plan: ColourParams | None, tone_curve: str) -> dict[str, Any]:
    """A JSON-ready account of one colour plan (None: tags with no formula, drawn as they are)."""
    if plan is None:
        return {
            "managed": False,
            "reason": "the frame's transfer or primaries have no formula: drawn as tagged",
        }
    p = plan.plan
    return {
        "managed": not p.identity,
        "source_peak_cd_m2": round(p.source_peak_cd_m2, 3),
        "target_peak_cd_m2": round(p.target_peak_cd_m2, 3),
        "tone_curve": tone_curve,
        **p.details,
    }


def colour_report(renderer: Any, options: Any, source_colour: ColourInfo | None = None) -> dict[str, Any]:
    """The player's colour stats from its renderer's latest plan and its options; ``source_colour`` (the
    frame's resolved colour) adds its matrix and range, and ``guessed``: what was taken for missing tags."""
    report = plan_dict(renderer.last_colour, options.tone_curve.name.lower())
    report["target"] = f"{renderer.colour_target.transfer.name} {renderer.colour_target.primaries.name}"
    if source_colour is not None:
        report["matrix"] = _MATRIX_NAMES.get(source_colour.matrix, source_colour.matrix.name)
        report["range"] = source_colour.range.name.lower()
        report["guessed"] = guessed_notes(source_colour)
    return report


def colour_summary(report: dict[str, Any]) -> str:
    """One line of ``--stats``."""
    if not report.get("managed"):
        # Not 'as tagged', which read against a guessed matrix after it (a person's pass): no tone or
        # gamut mapping is what it means.
        target = report.get("target", "the display's")
        line = report.get("reason") or (
            f"no tone or gamut mapping (the frames' transfer and primaries, {target}, are the display's)"
        )
    else:
        line = (
            f"managed to {report.get('target', 'the target')}: transfer {report['transfer']}, primaries "
            f"{report['primaries']}, tone {report['tone']} ({report['tone_curve']})"
        )
    guessed = report.get("guessed") or []
    if report.get("matrix") and not guessed:
        line += f"; matrix {report['matrix']}, {report['range']} range"
    return line + "".join(f"; {note}" for note in guessed)
