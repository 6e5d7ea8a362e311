"""Show alpha2 frames in pygfx, through public APIs only (offscreen here; a window works the same way).

pygfx renders on its own shared device; alpha2 opens its source on that same device, so decoding,
import and the YUV->RGB render happen there. pygfx has no public way to wrap an existing GPUTexture
(its ``Texture`` owns its GPU texture), so each frame goes in as an RGB array (``frame.to_ndarray()``)
and pygfx uploads it; the zero-copy route would need pygfx to accept an external texture.

Usage: python pygfx_video.py [VIDEO]   (default: the clip ``alpha2 sample /tmp/alpha2-sample.mp4`` writes)
"""

from __future__ import annotations

import sys

import numpy as np
import pygfx as gfx
from rendercanvas.offscreen import RenderCanvas

import alpha2

path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/alpha2-sample.mp4"
canvas = RenderCanvas(size=(320, 180))
renderer = gfx.renderers.WgpuRenderer(canvas)
device = gfx.renderers.wgpu.get_shared().device
scene = gfx.Scene()
camera = gfx.OrthographicCamera(1280, 720)
camera.local.position = (640, 360, 0)
camera.local.scale_y = -1  # image rows run downwards

with alpha2.open(path, device=device) as source:
    image = None
    for frame in source:
        pixels = frame.to_ndarray("rgba")
        if image is None:
            texture = gfx.Texture(pixels.copy(), dim=2)
            image = gfx.Image(gfx.Geometry(grid=texture), gfx.ImageBasicMaterial(clim=(0, 255)))
            scene.add(image)
        else:
            texture.data[:] = pixels
            texture.update_range((0, 0, 0), texture.size)
        canvas.request_draw(lambda: renderer.render(scene, camera))
        shown = np.asarray(canvas.draw())
        if frame.pts_seconds >= 0.1:
            break

assert shown.shape[:2] == (180, 320) and shown[..., :3].any()
print("pygfx showed", shown.shape, "last pts", frame.pts_seconds)
