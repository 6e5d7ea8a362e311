"""The GPU copy's own Python per frame, over the CUDA/Vulkan/Dawn fakes of the tests: no GPU needed.

With many streams in one process the GIL bounds the frames per second (BENCHMARKS.md, "Copies side by
side, and the GIL"): every microsecond of Python a frame costs counts against it, on the decoders'
threads and on the importing one. This times what alpha2 itself runs for one frame of the GPU copy,
copied ahead: ``CudaVkPairing.copy_ahead`` (the decoder's thread), then ``acquire`` and the ticket's
release (the importing thread), over the fakes of ``tests/test_cuda_vk_pairing.py``, whose calls cost
next to nothing. The figure is the best of ``--repeat`` runs (the machine's noise only adds).

    python benchmarks/bench_pairing_python.py [--frames 400] [--repeat 25]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=400, help="frames per run")
    parser.add_argument("--repeat", type=int, default=25, help="runs; the best is reported")
    args = parser.parse_args()

    import pytest
    from test_cuda_vk_pairing import NativeSurfaceLease, Rig, cuda_frame

    monkeypatch = pytest.MonkeyPatch()
    rig = Rig(monkeypatch, slots=3)
    pairing = rig.pairing
    pairing.prepare_stream(cuda_frame().identity, ahead=True)

    def run(count: int) -> float:
        decoded = [cuda_frame() for _ in range(count)]  # made before the clock: the decoder's part
        handed = [cuda_frame() for _ in range(count)]
        start = time.perf_counter()
        for source, frame in zip(decoded, handed, strict=True):
            frame._ahead = pairing.copy_ahead(source)
            pairing.acquire(frame, NativeSurfaceLease(frame), None).release()
        seconds = (time.perf_counter() - start) / count
        rig.dawn.close_fences()  # the fake Dawn's own fds (real Dawn closes its fences itself)
        return seconds

    run(args.frames)  # warm-up
    runs = sorted(run(args.frames) for _ in range(args.repeat))
    copied = pairing.stats().copied_ahead
    print(
        f"copy_ahead + acquire + release over fakes: best {runs[0] * 1e6:.1f} us a frame, median "
        f"{runs[len(runs) // 2] * 1e6:.1f} us ({args.repeat} runs of {args.frames} frames; "
        f"{copied} copied ahead)"
    )
    pairing.close()
    rig.dawn.close()
    monkeypatch.undo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
