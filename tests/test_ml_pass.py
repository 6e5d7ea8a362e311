"""Faults an outside pass over the machine-learning front door found (frames_at, to_tensor, the data
loader), each kept from coming back. Clips are made here with PyAV."""

from __future__ import annotations

import numpy as np
import pytest

from tests.media import make_clip


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    pytest.importorskip("av")
    folder = tmp_path_factory.mktemp("ml_pass")
    return make_clip(folder / "clip.mp4", width=32, height=16, frames=2).path


@pytest.mark.vulkan
def test_to_tensor_takes_numpy_s_own_dtypes_for_their_names(clip: str) -> None:
    """dtype=np.dtype('float32') failed with Python's ValueError from inside ('dtype('float32') is not a
    valid TensorDType': it compares equal to 'float32', so the check let it by) and np.float32 was
    refused; both are numpy's names of a dtype to_tensor makes. Others are still refused by name."""
    import alpha2
    from alpha2.gpu.errors import InvalidInputError

    with alpha2.open(clip, hwaccel="none") as source:
        frames = source.frames_at([0.0])
        try:
            for asked, made in (
                (np.dtype("float32"), np.float32),
                (np.float32, np.float32),
                (np.float16, np.float16),
                (np.uint8, np.uint8),
            ):
                tensor = source.to_tensor(frames, size=(8, 4), dtype=asked)
                assert tensor.dtype == made
                assert tensor.numpy().dtype == made
            for wrong in (np.float64, np.dtype("int32"), "float64"):
                with pytest.raises(InvalidInputError, match="dtype must be one of 'uint8', 'float16'"):
                    source.to_tensor(frames, dtype=wrong)
        finally:
            for frame in frames:
                frame.release()


@pytest.mark.vulkan
def test_to_tensor_refuses_a_size_over_the_texture_limit_by_name(clip: str) -> None:
    """size=(20000, 1) reached the device as wgpu's GPUValidationError ('Dimension X value 20000 exceeds
    the limit of 16384'), not an alpha2 error; now an UnsupportedError saying the limit, and the source
    goes on converting."""
    import alpha2
    from alpha2.api.devices import texture_limit
    from alpha2.gpu.errors import UnsupportedError

    with alpha2.open(clip, hwaccel="none") as source:
        frames = source.frames_at([0.0])
        try:
            limit = texture_limit(source.device.webgpu_device)
            assert limit is not None
            for size in ((limit + 1, 1), (1, limit + 1)):
                with pytest.raises(UnsupportedError, match=f"at most {limit} pixels a side") as caught:
                    source.to_tensor(frames, size=size)
                assert f"{size[0]}x{size[1]}" in str(caught.value)
            assert source.to_tensor(frames, size=(8, 4)).shape == (1, 4, 8, 3)
        finally:
            for frame in frames:
                frame.release()


def _child_outcome(pid: int, timeout_s: float) -> int | None:
    """The forked child's exit code, or None when it had not ended within ``timeout_s`` (then killed)."""
    import os
    import signal
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


@pytest.mark.vulkan
@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_source_copied_by_a_fork_is_refused_there_and_dropped_without_a_hang(clip: str) -> None:
    """A dataset holding an open source (one item looked at before the DataLoader started) handed it to
    forked workers, where the first frames_at waited forever for FFmpeg's decoder threads, which the
    fork did not copy, and so did dropping it (avcodec_free_context): the DataLoader hung with no word.
    Now the copy refuses work with a ClosedError saying to open the file in the worker, and dropping
    it frees nothing there; the parent's source goes on."""
    import gc
    import os
    import warnings

    import alpha2
    from alpha2.gpu.errors import ClosedError

    source = alpha2.open(clip, hwaccel="none")
    try:
        frames = source.frames_at([0.0])
        source.to_tensor(frames, size=(8, 4))
        frames[0].release()
        del frames
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                os.close(read)
                try:
                    source.frames_at([0.0])
                except ClosedError as exc:
                    os.write(write, str(exc).encode())
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", ResourceWarning)
                        del exc
                        source.close()
                        gc.collect()
                    code = 0
            finally:
                os._exit(code)
        os.close(write)
        outcome = _child_outcome(pid, 30.0)
        with os.fdopen(read, "rb") as said:
            message = said.read().decode()
        assert outcome == 0, f"the forked child {'hung' if outcome is None else f'exited {outcome}'}"
        assert "was forked from" in message and "open the file again in this process" in message
        frames = source.frames_at([0.0])  # the parent's own source still works
        assert source.to_tensor(frames, size=(8, 4)).shape == (1, 4, 8, 3)
        frames[0].release()
    finally:
        source.close()


@pytest.mark.vulkan
def test_a_normalisation_the_float_dtype_cannot_hold_is_refused(clip: str) -> None:
    """dtype='float16' with std=1e-5 gave a tensor of inf (numpy's overflow warning from inside the
    element table, nothing else); now an InvalidInputError with the largest value and the way out.
    Values float16 can hold still convert."""
    import alpha2
    from alpha2.gpu.errors import InvalidInputError

    with alpha2.open(clip, hwaccel="none") as source:
        frames = source.frames_at([0.0])
        try:
            with pytest.raises(
                InvalidInputError, match="float16 values would reach 1e\\+05, past its largest 65504"
            ):
                source.to_tensor(frames, dtype="float16", std=1e-5)
            with pytest.raises(InvalidInputError, match="float32 values would reach"):
                source.to_tensor(frames, dtype="float32", mean=0.5, std=1e-39)
            held = source.to_tensor(frames, dtype="float16", mean=0.5, std=1e-4).numpy()
            assert np.isfinite(held).all()
        finally:
            for frame in frames:
                frame.release()


@pytest.mark.vulkan
def test_a_frame_too_large_to_bind_says_uint8_only_where_uint8_fits(clip: str) -> None:
    """'ask for a smaller size, or uint8' was said of a uint8 tensor, and of a float one whose uint8 frame
    would not fit either (an outside pass)."""
    import alpha2
    from alpha2.gpu.errors import UnsupportedError

    with alpha2.open(clip) as source:
        frames = source.frames_at([0.0])
        limit = source.device.webgpu_device.limits["max-storage-buffer-binding-size"]
        side = 1 << 14  # 16384 (the largest texture side): a uint8 RGB frame of 805 MB
        checked = 0
        if side * side * 3 > limit:  # lavapipe's 128 MiB; not a device that binds more
            for dtype in ("uint8", "float32"):
                with pytest.raises(UnsupportedError) as caught:
                    source.to_tensor(frames, size=(side, side), dtype=dtype)
                said = str(caught.value)
                assert "ask for a smaller size" in said and "uint8" not in said.split(";")[1], said
            checked += 1
        width = next((w for w in (2048, 4096, 8192) if w * 4096 * 3 * 4 > limit >= w * 4096 * 3), None)  # RGB
        if width is not None:
            with pytest.raises(UnsupportedError, match="ask for a smaller size, or uint8"):
                source.to_tensor(frames, size=(width, 4096), dtype="float32")
            checked += 1
        for frame in frames:
            frame.release()
        if not checked:
            pytest.skip(f"this device binds {limit} bytes at once: no size here is too large for it")
