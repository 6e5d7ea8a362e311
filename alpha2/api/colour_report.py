"""What the colour-managed pass did, for the player's and transcoder's ``--stats`` / ``--json``."""

from __future__ import annotations

from typing import Any

from alpha2.native_gpu.render.colour_params import ColourParams

__all__ = ["colour_report", "colour_summary", "plan_dict"]


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


def colour_report(renderer: Any, options: Any) -> dict[str, Any]:
    """The player's colour stats from its renderer's latest plan and its options."""
    report = plan_dict(renderer.last_colour, options.tone_curve.name.lower())
    report["target"] = f"{renderer.colour_target.transfer.name} {renderer.colour_target.primaries.name}"
    return report


def colour_summary(report: dict[str, Any]) -> str:
    """One line of ``--stats``."""
    if not report.get("managed"):
        return (
            report.get("reason") or f"as tagged (the frames are {report.get('target', 'the target')} already)"
        )
    return (
        f"managed to {report.get('target', 'the target')}: transfer {report['transfer']}, primaries "
        f"{report['primaries']}, tone {report['tone']} ({report['tone_curve']})"
    )
