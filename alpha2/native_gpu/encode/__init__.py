"""The encode room: rendered RGBA textures back to encoder planes (the copier, its WGSL and extents)."""
