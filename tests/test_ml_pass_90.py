"""Faults an outside pass (helper 90) over the machine-learning API found: times and tensor options
given as 0-d or 1-d numpy arrays and torch tensors, and sources and frames met by pickle (a spawn
DataLoader pickles its dataset). Clips are made here with PyAV."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from tests.media import make_clip


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    pytest.importorskip("av")
    folder = tmp_path_factory.mktemp("ml_pass_90")
    return make_clip(folder / "clip.mp4", width=32, height=16, frames=6, rate=25).path


def _pts(frames: list) -> list[float | None]:
    try:
        return [frame.pts_seconds for frame in frames]
    finally:
        for frame in frames:
            frame.release()


def test_a_zero_d_numpy_array_is_a_time() -> None:
    """np.array(0.1) (what indexing or reducing an array of times often gives) was refused as 'not a
    number of seconds'; np.float64 was taken. A 0-d bool or complex array is still refused."""
    from alpha2.api.source import _check_seconds
    from alpha2.gpu.errors import InvalidInputError

    assert _check_seconds(np.array(0.1)) == 0.1
    assert _check_seconds(np.array(2, dtype=np.int64)) == 2.0
    for wrong in (np.array(True), np.array(1 + 0j), np.array([0.1]), np.array(-1.0), np.array(np.nan)):
        with pytest.raises(InvalidInputError, match="a time must be a"):
            _check_seconds(wrong)


@pytest.mark.vulkan
def test_frames_at_takes_a_torch_tensor_of_times(clip: str) -> None:
    """frames_at(torch.linspace(...)) was refused ('a time must be a number of seconds, got
    tensor(0.5000)': iterating a tensor gives 0-d tensors) while frames_at_index took a tensor of
    indices; the times pick the same frames as the list of floats does, in the order asked."""
    torch = pytest.importorskip("torch")
    import alpha2
    from alpha2.gpu.errors import InvalidInputError

    asked = [0.13, 0.0, 0.05, 0.13]
    with alpha2.open(clip, hwaccel="none") as source:
        expected = _pts(source.frames_at(asked))
        assert expected == pytest.approx([0.12, 0.0, 0.04, 0.12])
        assert _pts(source.frames_at(torch.tensor(asked, dtype=torch.float64))) == expected
        assert _pts(source.frames_at(np.array(asked))) == expected
        frame = source.frame_at(torch.tensor(0.05, dtype=torch.float64))
        assert _pts([frame]) == [pytest.approx(0.04)]
        with pytest.raises(InvalidInputError, match="a time must be a number of seconds"):
            source.frames_at(torch.tensor([True]))
        with pytest.raises(InvalidInputError, match="finite number of seconds >= 0"):
            source.frames_at(torch.tensor([-0.5]))


@pytest.mark.vulkan
def test_to_tensor_takes_torch_tensors_for_size_crop_and_mean(clip: str) -> None:
    """size=torch.tensor([8, 4]) and crop=torch.tensor([...]) were refused though np.array of them was
    taken, and mean=torch.tensor(0.5) (a 0-d tensor) was refused though torch.tensor([.5, .5, .5]) was
    taken; each now makes the tensor the tuple makes."""
    torch = pytest.importorskip("torch")
    import alpha2

    with alpha2.open(clip, hwaccel="none") as source:
        (frame,) = source.frames_at([0.0])
        with frame:
            plain = frame.to_tensor(
                size=(8, 4), crop=(2, 1, 20, 12), dtype="float32", mean=0.5, std=0.25
            ).numpy()
            made = frame.to_tensor(
                size=torch.tensor([8, 4]),
                crop=torch.tensor([2, 1, 20, 12]),
                dtype="float32",
                mean=torch.tensor(0.5),
                std=np.array(0.25),
            ).numpy()
            assert made.shape == (4, 8, 3)
            assert np.array_equal(made, plain)


@pytest.mark.vulkan
def test_sources_and_frames_refuse_pickling_with_a_typed_error(clip: str) -> None:
    """A spawn DataLoader pickles its dataset: one holding an open source failed with 'TypeError: cannot
    pickle '_cffi_backend._CDataBase' object' (a frame: 'no default __reduce__ due to non-trivial
    __cinit__'), and copy.deepcopy left an 'Exception ignored in GPUDevice.__del__' traceback. Each is
    now an InvalidInputError that says what to do, and so is an alpha2 Device's; a CPU tensor still
    pickles."""
    import alpha2
    from alpha2.gpu.errors import InvalidInputError

    with alpha2.open(clip, hwaccel="none") as source:
        for attempt in (pickle.dumps, copy.deepcopy, copy.copy):
            with pytest.raises(InvalidInputError, match="open the file in each process"):
                attempt(source)
        (frame,) = source.frames_at([0.0])
        with frame:
            for attempt in (pickle.dumps, copy.deepcopy, copy.copy):
                with pytest.raises(InvalidInputError, match=r"frame\.to_tensor"):
                    attempt(frame)
            tensor = frame.to_tensor(device="cpu")
            again = pickle.loads(pickle.dumps(tensor))
            assert np.array_equal(again.numpy(), tensor.numpy())
        for attempt in (pickle.dumps, copy.deepcopy, copy.copy):  # a spawn worker's dataset holding one
            with pytest.raises(InvalidInputError, match="open one in each process"):
                attempt(source.device)
        assert _pts(source.frames_at([0.05])) == [pytest.approx(0.04)]  # the source still works


@pytest.mark.vulkan
def test_an_infinite_mean_is_refused_as_not_finite(clip: str) -> None:
    """mean=inf was told 'mean is on the 0..1 scale ...; means in codes (0..255) divided by 255 are (inf,
    inf, inf)', advice that cannot help; now, like nan, it is refused as not finite."""
    import alpha2
    from alpha2.gpu.errors import InvalidInputError

    with alpha2.open(clip, hwaccel="none") as source:
        (frame,) = source.frames_at([0.0])
        with frame:
            for name in ("mean", "std"):
                for wrong in (float("inf"), (0.5, float("-inf"), 0.5), float("nan")):
                    with pytest.raises(InvalidInputError, match=f"^{name} must be .*finite") as caught:
                        frame.to_tensor(dtype="float32", **{name: wrong})
                    assert "0..1 scale" not in caught.value.message


@pytest.mark.vulkan
def test_frames_of_a_closed_device_are_refused_with_a_closed_error(clip: str) -> None:
    """After the source's Device was closed (a worker's shared Device closed before its sources'
    frames), to_tensor failed with AttributeError ''NoneType' object has no attribute 'write_buffer''
    and to_ndarray with a cffi TypeError; both are now a ClosedError that says so. Decoding goes on."""
    import alpha2
    from alpha2.gpu.errors import ClosedError

    with alpha2.open(clip, hwaccel="none") as source:
        (frame,) = source.frames_at([0.0])
        with frame:
            frame.to_tensor(size=(8, 4))
            source.device.close()
            for convert in (frame.to_tensor, frame.to_ndarray, lambda: source.to_tensor([frame])):
                with pytest.raises(ClosedError, match=r"Device of this VideoSource .* was closed"):
                    convert()
        assert _pts(source.frames_at([0.05])) == [pytest.approx(0.04)]


@pytest.mark.vulkan
@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_device_opened_before_a_fork_is_refused_in_the_child_without_a_hang(clip: str) -> None:
    """A dataset holding an alpha2 Device made in the main process (for its workers' sources to share)
    hung each forked DataLoader worker for ever at its first conversion (queue.submit waits for the
    driver's threads, which stay in the parent), with no word. Now alpha2.open(device=that Device) in
    the child is a ClosedError that says to open the Device there; the parent's Device goes on."""
    import os

    import alpha2
    from alpha2.gpu.errors import ClosedError
    from tests.test_ml_pass import _child_outcome

    with alpha2.open(clip, hwaccel="none") as source:
        device = source.device
        (frame,) = source.frames_at([0.0])
        with frame:
            frame.to_tensor(size=(8, 4))
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                os.close(read)
                try:
                    with alpha2.open(clip, hwaccel="none", device=device) as child:
                        child.to_tensor(child.frames_at([0.0]), size=(8, 4))
                except ClosedError as exc:
                    os.write(write, str(exc).encode())
                    code = 0
            finally:
                os._exit(code)
        os.close(write)
        outcome = _child_outcome(pid, 30.0)
        with os.fdopen(read, "rb") as said:
            message = said.read().decode()
        assert outcome == 0, f"the forked child {'hung' if outcome is None else f'exited {outcome}'}"
        assert "was forked from" in message and "open the Device in this process" in message
        with alpha2.open(clip, hwaccel="none", device=device) as again:  # the parent's Device goes on
            frames = again.frames_at([0.0])
            assert again.to_tensor(frames, size=(8, 4)).shape == (1, 4, 8, 3)
            frames[0].release()


@pytest.mark.vulkan
def test_numpy_s_copy_false_is_honoured_or_refused(clip: str) -> None:
    """np.array(tensor, dtype=np.float32, copy=False) of a uint8 tensor returned a converted copy
    silently, where numpy 2's protocol asks for an error when a copy cannot be avoided (numpy's own
    arrays raise ValueError); the same dtype with copy=False still shares the memory."""
    import alpha2

    with alpha2.open(clip, hwaccel="none") as source:
        (frame,) = source.frames_at([0.0])
        with frame:
            tensor = frame.to_tensor(size=(8, 4), device="cpu")
            with pytest.raises(ValueError, match="without a copy"):
                np.array(tensor, dtype=np.float32, copy=False)
            assert np.shares_memory(np.array(tensor, copy=False), tensor.numpy())
            assert np.array(tensor, dtype=np.float32).dtype == np.float32
            assert not np.shares_memory(np.array(tensor, copy=True), tensor.numpy())
