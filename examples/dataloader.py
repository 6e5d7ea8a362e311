"""A PyTorch data loader over a folder of videos: clips sampled at random times, as RGB tensors.

Each ``DataLoader`` worker opens one ``alpha2.Device`` and its own sources on it (an ``alpha2.open`` per
file, kept for the worker's life: a device each would cost a worker a GPU context and a thread a file);
``source.frames_at`` decodes a clip's frames in one forward pass (exact on variable frame rate),
and ``source.to_tensor`` converts them with the renderer's exact colour conversion, resized and
normalised, as one ``(T, 3, H, W)`` float tensor: CUDA memory through DLPack where the GPU allows (NVDEC
and a Dawn device), else a numpy array. Every tensor says which path its pixels took.

Usage: python dataloader.py FOLDER_OR_VIDEO [...]
"""

import random
import sys
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

import alpha2

CLIP_FRAMES = 4  # frames a clip
STEP_S = 0.1  # seconds between them (less in a video shorter than a clip)
SIZE = (112, 112)  # (width, height) of each picture


class VideoClips(Dataset):
    """``clips_per_video`` clips from each video, at times drawn once (seeded)."""

    def __init__(self, videos: list[str], clips_per_video: int = 2, seed: int = 0) -> None:
        rng = random.Random(seed)
        self.videos, self.items = [], []
        for path in videos:
            try:
                with alpha2.open(path, hwaccel="none") as source:
                    seconds = source.duration_seconds or 1.0
            except alpha2.Error as exc:  # a folder's song, or a damaged file: said, and left out
                print(f"skipped {path}: {exc} ({exc.kind.value})", file=sys.stderr)
                continue
            self.videos.append(path)
            step = min(STEP_S, seconds / CLIP_FRAMES)  # a video shorter than a clip: its frames closer
            last = seconds - CLIP_FRAMES * step  # the clip's last time is before the end (which has no frame)
            for _ in range(clips_per_video):
                self.items.append((path, rng.uniform(0.0, max(last, 0.0)), step))
        self.sources: dict[str, alpha2.VideoSource] = {}  # this worker's own, opened on first use
        self.device: alpha2.Device | None = None  # this worker's one device, which its sources share

    def __len__(self) -> int:
        return len(self.items)

    def source(self, path: str) -> alpha2.VideoSource:
        if path not in self.sources:
            source = self.sources[path] = alpha2.open(path, device=self.device)
            if self.device is None:  # the worker's first source opens it (on NVDEC's GPU, with its features)
                self.device = source.device  # and keeps it: sources stay open for the worker's life
        return self.sources[path]

    def __getitem__(self, index: int) -> tuple[torch.Tensor, str]:
        path, start, step = self.items[index]
        source = self.source(path)
        frames = source.frames_at([start + i * step for i in range(CLIP_FRAMES)])
        try:
            clip = source.to_tensor(frames, size=SIZE, layout="CHW", dtype="float32", mean=0.45, std=0.225)
            on_cuda = clip.device.startswith("cuda")
            tensor = torch.from_dlpack(clip) if on_cuda else torch.from_numpy(clip.numpy())
            return tensor.clone(), clip.path.value  # the clone owns its memory once the frames go
        finally:
            for frame in frames:
                frame.release()


def main() -> None:
    videos = []
    for arg in sys.argv[1:] or ["/tmp/alpha2-sample.mp4"]:
        videos += [str(p) for p in sorted(Path(arg).glob("*.mp4"))] if Path(arg).is_dir() else [arg]
    clips = VideoClips(videos)
    if not clips.videos:
        sys.exit("no video to sample from")
    loader = DataLoader(clips, batch_size=2, num_workers=2)
    for batch, paths in loader:
        print(tuple(batch.shape), batch.dtype, f"mean {batch.mean():.3f}", "paths:", sorted(set(paths)))


# The guard: workers started by spawn or forkserver (macOS, Windows, and Python 3.14's default on Linux)
# import this file again, and without it each would start a DataLoader of its own.
if __name__ == "__main__":
    main()
