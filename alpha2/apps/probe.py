"""``alpha2 probe``: which GPU adapters there are, what each can do, and which one alpha2 would use;
``alpha2 probe FILE ...``: what media files hold (:mod:`alpha2.apps.probe_files`).

``tools/probe_adapters.py`` runs the same :func:`run` with its own parser. Exit status 0 when an adapter
alpha2 can use is found; 1 when every adapter found is unusable (the table or ``--json`` document is
printed still, saying why each is); 1 with one line ``alpha2: error: ...`` when none is found (no Vulkan
loader, no driver), or when ``ALPHA2_GPU_ADAPTER`` names no adapter or several.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from alpha2.apps.cli import (
    EXAMPLES_HEADING,
    column_widths,
    fit_columns,
    help_formatter,
    terminal_columns,
)
from alpha2.gpu.adapters import ADAPTER_ENV, RankedAdapter, adapter_pin, as_policy, rank_adapters
from alpha2.gpu.errors import UnsupportedError

# The Vulkan side (the loader through cffi, the device probes) loads when the adapters are asked for,
# so that ``alpha2 probe --help`` answers at once.
if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.table import Table

    from alpha2.api.machine import VulkanCandidate


def register(subparsers: Any) -> None:
    """Add the ``probe`` subcommand."""
    parser = subparsers.add_parser(
        "probe",
        help="list GPU adapters and which one alpha2 chooses; with files, what each holds",
        description="Without FILE: which GPU adapters there are, what each can do, and which one alpha2 "
        "would use. With FILE: what each media file holds (container, streams, languages), and for its "
        "video the colour, HDR metadata and the decoder alpha2 would use.",
        epilog=f"{EXAMPLES_HEADING}\n"
        "  alpha2 probe\n"
        "  alpha2 probe --json > adapters.json\n"
        "  alpha2 probe --policy low-power --submit\n"
        f"  {ADAPTER_ENV}=1 alpha2 probe           (pin adapter #1)\n"
        "  alpha2 probe clip.mkv                       (streams, colour, decoder)\n"
        "  alpha2 probe *.mp4 --json --no-decode",
        formatter_class=help_formatter(),
    )
    parser.add_argument(
        "inputs",
        nargs="*",
        metavar="FILE",
        help="media files to describe instead of the adapters",
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The probe's options (shared by ``alpha2 probe`` and tools/probe_adapters.py)."""
    parser.add_argument("--json", action="store_true", help="print JSON for machines instead of a table")
    parser.add_argument(
        "--policy",
        default="auto",
        help="adapter policy: auto (default), high-performance, low-power, or an adapter index/UUID/name",
    )
    parser.add_argument(
        "--no-decode",
        action="store_true",
        help="adapters: do not count GPU video decode in the ranking; files: decode nothing (the "
        "container's word only)",
    )
    parser.add_argument(
        "--submit",
        action="store_true",
        help="also open the shared Vulkan device on the chosen adapter and run the submission probe",
    )


def _gib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / (1 << 30):.1f} GiB"


def _interop(c: VulkanCandidate) -> str:
    from alpha2.api.machine import ExternalHandleType

    parts = []
    mem = [
        name
        for kind, name in ((ExternalHandleType.OPAQUE_FD, "fd"), (ExternalHandleType.DMA_BUF, "dmabuf"))
        if (s := c.external_memory_support(kind)) is not None and s.supported
    ]
    if mem:
        parts.append("mem " + "+".join(mem))
    sem = []
    for kind, timeline, name in (
        (ExternalHandleType.OPAQUE_FD, False, "fd"),
        (ExternalHandleType.OPAQUE_FD, True, "fd-timeline"),
        (ExternalHandleType.SYNC_FD, False, "sync-fd"),
    ):
        s = c.external_semaphore_support(kind, timeline=timeline)
        if s is not None and s.supported:
            sem.append(name)
    if sem:
        parts.append("sem " + "+".join(sem))
    if c.timeline_semaphores:
        parts.append("timeline")
    return ", ".join(parts) or "none"


def _codecs(c: VulkanCandidate, decode: bool) -> str:
    support = [v for v in c.video if v.supported and (v.operation.value == "decode") == decode]
    if not support:
        return "-"
    out = []
    for v in sorted(support, key=lambda v: v.codec.value):
        depths = "/".join(str(d) for d in v.bit_depths)
        extent = f" {v.max_coded_extent[0]}x{v.max_coded_extent[1]}" if v.max_coded_extent else ""
        out.append(f"{v.codec.value}" + (f" ({depths}-bit{extent})" if depths else ""))
    return ", ".join(out)


def _collect(args: argparse.Namespace) -> tuple[list[VulkanCandidate], list[RankedAdapter[VulkanCandidate]]]:
    from alpha2.api.machine import vulkan_candidates

    candidates = vulkan_candidates()
    if not candidates:
        raise UnsupportedError(
            "no GPU adapter found: the Vulkan loader lists no physical device; install a Vulkan driver "
            "(mesa-vulkan-drivers gives lavapipe on a machine without a GPU)"
        )
    usable = [c for c in candidates if c.usable]
    ranked = rank_adapters(usable, as_policy(args.policy), decode_allowed=not args.no_decode)
    return candidates, ranked


def run(args: argparse.Namespace) -> int:
    """Print the adapter table (or JSON), or describe the files given. Raises alpha2 errors for the
    command line to report."""
    if getattr(args, "inputs", None):
        from alpha2.apps.probe_files import run_files

        return run_files(args)
    candidates, ranked = _collect(args)
    by_index = {r.adapter.index: r for r in ranked}
    pin = adapter_pin()
    chosen = ranked[0].adapter if ranked else None
    submission: dict[str, Any] | None = None
    if args.submit and chosen is not None:
        submission = _submission(chosen, not args.no_decode)
    if args.json:
        adapters = []
        for c in candidates:
            entry = c.to_dict()
            r = by_index.get(c.index)
            entry.update(
                rank=r.rank if r else None,
                reason=r.reason if r else f"unusable: {c.error}",
                pinned=bool(r and r.pinned),
                chosen=bool(r and r.chosen),
            )
            adapters.append(entry)
        doc = {
            "adapters": adapters,
            "policy": str(as_policy(args.policy)),
            "pinned": f"{ADAPTER_ENV}={pin.text}" if pin else None,
            "chosen": chosen.index if chosen else None,
            "submission": submission,
        }
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0 if chosen is not None else 1  # as the table: a script reads the status before the document
    _print_table(candidates, by_index, pin.text if pin else None, chosen, submission)
    return 0 if chosen is not None else 1


def _submission(candidate: VulkanCandidate, decode: bool) -> dict[str, Any]:
    from alpha2.api.machine import SharedVulkanContext, probe_vulkan_submission

    with SharedVulkanContext(candidate, decode=decode) as context:
        result = probe_vulkan_submission(context)
        return {
            "ok": result.ok,
            "elapsed_s": result.elapsed_s,
            "reason": result.reason,
            "enabled_extensions": sorted(context.enabled_extensions),
            "enabled_features": sorted(context.enabled_features),
            "queues": [
                {"role": q.role and q.role.value, "family": q.queue_family_index, "index": q.queue_index}
                for q in context.queues
            ],
        }


_HEADERS = ("#", "name", "type", "driver", "API", "decode", "encode", "budget", "interop", "rank", "")
_PRIORITY = (0, 1, 10, 9, 2, 5, 6, 7, 3, 4, 8)
"""The columns kept first when the terminal is narrow: #, name, the marks, rank, type, decode, ..."""


_MARKS = 10
"""The marks column (``pinned chosen``), kept on one line where the others can wrap."""


def adapter_table(rows: Sequence[Sequence[str]], width: int) -> tuple[Table, list[int]]:
    """The adapter table of ``rows`` (one text per :data:`_HEADERS` column) for ``width`` columns, and
    the columns left out of it: no word broken, and the marks (``pinned chosen``) whole on one line,
    the other columns wrapping in what they leave."""
    from rich.table import Table

    kept, left_out = fit_columns(_HEADERS, rows, width, _PRIORITY)
    widths = column_widths(_HEADERS, rows, kept, width, whole=(_MARKS,))
    table = Table(title="Vulkan adapters (loader order)", show_lines=False)
    for i in kept:
        table.add_column(_HEADERS[i], overflow="fold", width=widths[i])
    for row in rows:
        table.add_row(*(row[i] for i in kept))
    return table, left_out


def _print_table(
    candidates: list[VulkanCandidate],
    by_index: dict[int, RankedAdapter[VulkanCandidate]],
    pin_text: str | None,
    chosen: VulkanCandidate | None,
    submission: dict[str, Any] | None,
) -> None:
    """The adapter table, fitted to the terminal: columns that do not fit without breaking words are
    left out of it and said under each adapter instead (``--json`` has everything)."""
    import textwrap

    from rich.console import Console

    width = terminal_columns(sys.stdout, default=200) or 200
    console = Console(width=width, highlight=False)
    rows = []
    for c in candidates:
        r = by_index.get(c.index)
        marks = []
        if r is not None and r.pinned:
            marks.append("pinned")
        if chosen is not None and c.index == chosen.index:
            marks.append("chosen")
        driver = f"{c.driver_name or c.vendor} {c.driver_version}".strip()
        budget = _gib(c.memory_budget_bytes)
        if c.memory_budget_bytes is None and c.device_local_bytes:
            budget += f" (heap {_gib(c.device_local_bytes)})"
        rows.append(
            (
                str(c.index),
                c.name,
                c.device_type.label,
                driver,
                str(c.api_version),
                _codecs(c, True),
                _codecs(c, False),
                budget,
                _interop(c),
                str(r.rank) if r else "unusable",
                " ".join(marks),
            )
        )
    table, left_out = adapter_table(rows, width)
    console.print(table)
    if left_out:
        said = ", ".join(_HEADERS[i] for i in left_out)
        console.print(f"({said}: under each adapter, for the table to fit {width} columns)")

    def say(text: str, indent: str) -> None:
        for line in textwrap.wrap(
            text,
            width - 1,
            initial_indent=indent,
            subsequent_indent=indent + "  ",
            break_long_words=False,
            break_on_hyphens=False,
        ):
            console.print(line, markup=False)

    for c, row in zip(candidates, rows):
        r = by_index.get(c.index)
        why = r.reason if r else f"unusable: {c.error}"
        say(f"#{c.index}: {why}", "  ")
        if left_out:
            say("; ".join(f"{_HEADERS[i]} {row[i]}" for i in left_out), "     ")
        for problem in c.problems:
            say(f"query problem: {problem}", "     ")
    if pin_text is not None:
        console.print(f"pinned: {ADAPTER_ENV}={pin_text!r}", markup=False)
    if chosen is not None:
        console.print(f"chosen: #{chosen.index} {chosen.name}", markup=False)
    if submission is not None:
        state = "ok" if submission["ok"] else f"FAILED: {submission['reason']}"
        say(f"submission probe: {state} ({submission['elapsed_s'] * 1000:.1f} ms)", "")
