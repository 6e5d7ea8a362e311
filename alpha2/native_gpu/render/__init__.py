"""The render room: the Y'CbCr sampling shader (``yuv_to_rgb.wgsl``) and its parameters."""
