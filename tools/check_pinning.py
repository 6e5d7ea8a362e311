"""Check ALPHA2_GPU_ADAPTER pinning on this machine's GPUs, in every form.

For each Vulkan adapter, pins it by loader index, by UUID and by a name substring, opens the shared
Vulkan context there and reports which adapter was chosen and the CUDA ordinal matched to it by UUID
(the UUID bare and in its 'uuid:' form).
Then checks that an ambiguous name (shared by several devices: two entries of one UUID, one device
that two drivers list, are one) and an unknown value are refused.
Prints one line per check (folded at words in a terminal) and exits 1 when any check fails, or with
one line 'alpha2: error: ...' when there is no Vulkan adapter to check.

    python tools/check_pinning.py
"""

from __future__ import annotations

import os
import sys
import uuid as uuid_mod
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from alpha2.apps.cli import help_formatter, run_command, terminal_columns, wrap_lines
from alpha2.gpu.adapters import ADAPTER_ENV, AdapterPinError
from alpha2.gpu.errors import Error
from alpha2.native_gpu.device.candidates import vulkan_candidates
from alpha2.native_gpu.device.shared import choose_shared_vulkan, shared_device_index


def _pinned(value: str) -> tuple[int | None, str | None, int | None, str]:
    os.environ[ADAPTER_ENV] = value
    try:
        index = shared_device_index()
        choice = choose_shared_vulkan()
        context = choice.context
        opened = context.candidate.index if context is not None else None
        if context is not None:
            context.close()
        uuid = str(uuid_mod.UUID(bytes=index.uuid)) if index.uuid else None
        return opened, uuid, index.cuda_ordinal, choice.reason or "opened"
    finally:
        del os.environ[ADAPTER_ENV]


def _device(candidate: object) -> object:
    """One physical device: its UUID, else its loader index (as alpha2's pins tell devices apart)."""
    return getattr(candidate, "uuid", None) or getattr(candidate, "index", None)


def main(argv: list[str] | None = None) -> int:
    """Parse, check, and turn an alpha2 error (no Vulkan, no driver) into one line and exit status 1."""
    import argparse

    args = argparse.ArgumentParser(
        prog="check_pinning", description=__doc__, formatter_class=help_formatter()
    ).parse_args(argv)
    return run_command(_check, args)


def _check(args: object) -> int:
    os.environ.pop(ADAPTER_ENV, None)
    width = terminal_columns(sys.stdout)

    def say(line: str) -> None:
        print("\n".join(wrap_lines([line], width)))

    candidates = vulkan_candidates()
    failures = 0
    say(f"{len(candidates)} Vulkan adapter(s)")
    for c in candidates:
        uuid = str(uuid_mod.UUID(bytes=c.uuid)) if c.uuid else None
        say(f"#{c.index} {c.name} uuid={uuid}")
        error = getattr(c, "error", None)
        if error is not None:  # alpha2 ranks usable adapters only: there is nothing to pin
            say(f"  unusable, not checked: {error}")
            continue
        forms = [("index", str(c.index))]
        if uuid:
            forms += [("uuid", uuid), ("uuid", f"uuid:{uuid}")]
        same_name = {_device(o) for o in candidates if c.name.lower() in o.name.lower()}
        if len(same_name) == 1:
            forms.append(("name", c.name.upper()))  # case-insensitive
        # A device that two drivers list has one UUID: a pin by UUID or name opens the first entry.
        same_uuid = [o.index for o in candidates if c.uuid and o.uuid == c.uuid]
        for form, value in forms:
            try:
                opened, got_uuid, ordinal, why = _pinned(value)
            except Error as exc:
                failures += 1
                say(f"  pin by {form:5} {value!r:42} -> FAILED: {exc.message}")
                continue
            expected = [c.index] if form == "index" else (same_uuid[:1] or [c.index])
            ok = opened in expected and got_uuid == uuid
            failures += not ok
            say(
                f"  pin by {form:5} {value!r:42} -> opened #{opened} uuid={got_uuid} cuda ordinal={ordinal}"
                f" ({why}) {'ok' if ok else 'FAILED'}"
            )
    shared = [c.name for c in candidates if len({_device(o) for o in candidates if o.name == c.name}) > 1]
    for value, why in (
        ("no-such-gpu-xyz", "unknown"),
        (shared[0] if shared else "", "ambiguous"),
    ):
        if not value:
            continue
        try:
            _pinned(value)
        except AdapterPinError as exc:
            say(f"  pin {value!r} ({why}) refused: {exc.message.splitlines()[0]} ok")
        except Error as exc:  # refused, but not as a pin that names no adapter or several
            failures += 1
            say(f"  pin {value!r} ({why}) -> FAILED: {exc.message}")
        else:
            failures += 1
            say(f"  pin {value!r} ({why}) was accepted: FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
