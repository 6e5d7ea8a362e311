"""FFmpeg's cuvid decoder for one HEVC stream on NVDEC, where it gives the same frames faster.

FFmpeg decodes on NVDEC two ways. Its own HEVC decoder with the NVDEC hwaccel parses the stream in
FFmpeg and maps each picture as it leaves the decoder; ``hevc_cuvid`` hands the stream to NVIDIA's
parser, which keeps several pictures in flight before each is mapped and copied out. On a 1080p HEVC
clip on the H200 (``benchmarks/bench_cuvid.py``, BENCHMARKS.md) the cuvid decoder ran 1214 fps against
the hwaccel's 1040, with every timestamp and the planes of the frames compared the same, and
PyNvVideoCodec's ThreadedDecoder at 1269 in the same run.

What the cuvid decoder does not carry decides where it may be used: it hands out no per-frame side data
(HDR mastering and light levels, closed captions), rounds an odd size up to even, and does not decode
HEVC's range extensions the way the hwaccel reports them. So it decodes HEVC Main and Main 10 streams of
even size whose parameters name no HDR transfer; every other stream keeps the hwaccel, and the session's
report says which decoder ran and why.

It is the default where it suits the stream (``ALPHA2_NVDEC_DECODER=cuvid``): the NVDEC tests ran with
it on an H100 and passed (186, 2026-12-05, ``bash benchmarks/h200_run.sh cuvid-tests``), the frames of
both decoders compared equal, plane by plane, with their timestamps, durations and key flags.
``ALPHA2_NVDEC_DECODER=hwaccel`` keeps the hwaccel for every stream. Where the cuvid decoder fails before
its first frame, the hwaccel takes over and the report says so.
"""

from __future__ import annotations

import os
from typing import Any

import av

from alpha2.gpu.errors import InvalidInputError

CUVID_DECODERS = {"hevc": "hevc_cuvid"}
"""FFmpeg's cuvid decoder of each codec it is used for (H.264 decodes at the same pace either way on the
H200, 0.96 of PyNvVideoCodec with the hwaccel: it keeps the hwaccel)."""

CUVID_PROFILES = frozenset({"Main", "Main 10"})
"""HEVC profiles the cuvid decoder takes: 4:2:0 at 8 and 10 bits."""

HDR_TRANSFERS = frozenset({16, 18})
"""Transfer characteristics (ITU-T H.273) of HDR video: SMPTE ST 2084 (PQ) and ARIB STD-B67 (HLG),
whose per-frame mastering metadata only the hwaccel hands out."""

ENV = "ALPHA2_NVDEC_DECODER"
CHOICES = ("hwaccel", "cuvid")


def choice(environ: Any = None) -> str:
    """``ALPHA2_NVDEC_DECODER``: ``cuvid`` (the default: the cuvid decoder where it suits the stream,
    FFmpeg's decoders with the NVDEC hwaccel elsewhere) or ``hwaccel`` (the hwaccel for every stream)."""
    env = os.environ if environ is None else environ
    value = str(env.get(ENV, "") or "cuvid").strip().lower()
    if value not in CHOICES:
        raise InvalidInputError(f"{ENV}={env.get(ENV)!r} is not one of {', '.join(CHOICES)}")
    return value


def refusal(codec_context: Any, *, retimed: bool = False, environ: Any = None) -> str | None:
    """Why the cuvid decoder is not used for a stream with these parameters, or None where it is."""
    name = str(getattr(codec_context, "name", "") or "")
    if name not in CUVID_DECODERS:
        return f"no cuvid decoder is used for {name or 'this codec'}"
    if choice(environ) == "hwaccel":
        return f"the NVDEC hwaccel ({ENV}=hwaccel)"
    profile = getattr(codec_context, "profile", None)
    if profile not in CUVID_PROFILES:
        return f"the NVDEC hwaccel: HEVC profile {profile!r} (the cuvid decoder takes Main and Main 10)"
    width, height = int(codec_context.width or 0), int(codec_context.height or 0)
    if width <= 0 or height <= 0 or width % 2 or height % 2:
        return f"the NVDEC hwaccel: {width}x{height} (the cuvid decoder rounds an odd size up)"
    transfer = int(getattr(codec_context, "color_trc", 2) or 2)
    if transfer in HDR_TRANSFERS:
        return "the NVDEC hwaccel: HDR video (its per-frame mastering metadata)"
    if retimed:
        return "the NVDEC hwaccel: the container's frames are timed in decode order"
    return None


def open_decoder(codec_context: Any, hwaccel: Any) -> Any:
    """The cuvid decoder for the stream of ``codec_context`` (its parameters copied), opened on the
    device of ``hwaccel``; FFmpeg's error if it cannot be opened."""
    ctx: Any = av.CodecContext.create(CUVID_DECODERS[codec_context.name], "r", hwaccel=hwaccel)
    extradata = codec_context.extradata
    if extradata:
        ctx.extradata = extradata
    ctx.width, ctx.height = codec_context.width, codec_context.height
    ctx.open()
    return ctx
