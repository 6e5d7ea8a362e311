"""Decode, render and encode from asyncio without blocking the event loop.

``async for frame in source`` decodes on a worker thread, ``await frame.render_async(texture)`` awaits
the GPU's completion, and ``await writer.write_async(texture)`` runs the encode copier and the encoder
on a worker: the loop stays free for other tasks (here, a ticker that counts while the video runs).

Usage: python asyncio_frames.py [INPUT [OUTPUT]]
"""

import asyncio
import sys

import alpha2

source_path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/alpha2-sample.mp4"
output_path = sys.argv[2] if len(sys.argv) > 2 else "/tmp/alpha2-async.mp4"


async def ticker(ticks: list[int]) -> None:
    while True:
        await asyncio.sleep(0.005)
        ticks.append(1)


async def main() -> None:
    ticks: list[int] = []
    background = asyncio.create_task(ticker(ticks))
    with alpha2.open(source_path) as source, alpha2.create(output_path) as writer:
        target = source.renderer.target_texture(640, 360)
        async for frame in source:
            await frame.render_async(target)
            await writer.write_async(target)
            if frame.pts_seconds >= 0.5:
                break
        frames = writer.frames_written
    background.cancel()
    print(f"{frames} frames to {output_path}; the event loop ticked {len(ticks)} times meanwhile")


asyncio.run(main())
