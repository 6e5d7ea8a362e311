// YUV planes -> RGB, one full-screen triangle per frame (alpha2.native_gpu.render.renderer).
//
// Y'CbCr planes (r8/rg8/r16/rg16 unorm, all filterable) are read through a linear sampler: one
// hardware bilinear sample per plane per pixel, where a manual filter costs four textureLoads. The
// texture coordinates are affine in the pixel position, so the vertex shader computes them and the
// rasteriser interpolates them; the fragment shader only clamps them to the centres of the displayed
// texels (so the filter clamps at the edge of the picture, not of the padded texture), samples and
// applies the matrix. On lavapipe every per-pixel instruction counts: this is as cheap as a
// hand-written three-sample shader, with the chroma still exactly where the frame's siting says.
// Packed RGB planes (rgba32float among them, not filterable everywhere) keep textureLoad and a manual
// filter: fs_rgb binds no sampler. No branch depends on the uniform block around a texture read: on
// lavapipe that made a new shader variant on every draw (about 0.4 MB of memory a frame).
//
// Coordinates are "index space": luma sample (i, j) sits at (i, j). Chroma sample (k, l)
// sits at luma position (k * sx + off_x, l * sy + off_y), with sx, sy the subsampling factors
// and off_x, off_y the siting offset (LEFT 4:2:0: off = (0, 0.5); CENTER: (0.5, 0.5)).

struct Params {
    // rgb01 = M @ samples + offset, M's columns already scaled by value_scale (samples -> codes);
    // row r of M in .xyz, offset[r] in .w. The shader reads the same numbers as pipeline constants.
    row0: vec4<f32>,
    row1: vec4<f32>,
    row2: vec4<f32>,
    // Normalized sample -> integer code, per plane (Y, Cb, Cr) and alpha (.w).
    value_scale: vec4<f32>,
    // .xy: chroma samples per luma sample (1 / sx, 1 / sy); .zw: siting offset in luma pixels.
    chroma_map: vec4<f32>,
    // Source crop in luma pixels: x, y, width, height.
    src_rect: vec4<f32>,
    // .xy: source luma pixels per output pixel; .z: 1.0 when that is exactly 1 (fs_rgb loads directly).
    dst_map: vec4<f32>,
    // Clamp ranges (inclusive) in texels: luma min x, min y, max x, max y.
    luma_clamp: vec4<i32>,
    // Chroma plane: min x, min y, max x, max y.
    chroma_clamp: vec4<i32>,
    // Texel size of the bound planes: .xy luma (1 / width, 1 / height), .zw chroma.
    inv_dims: vec4<f32>,
    // The clamp ranges as texture coordinates of texel centres: luma min u, min v, max u, max v.
    luma_bounds: vec4<f32>,
    chroma_bounds: vec4<f32>,
};

// 1:1 (dst_map.z made a pipeline constant, for the reason above): each pixel is one luma texel, read
// with one direct load (fs_rgb's only read; the sampled layouts' luma, where a bilinear sample at the
// texel's centre gives the same value for more work: a 4 x 720p wall on lavapipe rendered 15-20% faster).
override ONE_TO_ONE: bool = false;
// The displayed texels are smaller than the textures (padding, a crop): clamp the sample positions.
// When they are the whole textures the sampler's clamp-to-edge does the same, and lavapipe is spared
// two instructions a plane per pixel.
override CLAMP_COORDS: bool = true;
// The colour matrix (M's columns scaled by value_scale) and offset, as pipeline constants: the same
// numbers as the uniform block's row0..row2, but constants cost lavapipe no load a pixel (one pipeline
// per stream colour, made once). Row r: M_r0, M_r1, M_r2, offset O_r.
override M00: f32 = 1.0;
override M01: f32 = 0.0;
override M02: f32 = 0.0;
override O0: f32 = 0.0;
override M10: f32 = 0.0;
override M11: f32 = 1.0;
override M12: f32 = 0.0;
override O1: f32 = 0.0;
override M20: f32 = 0.0;
override M21: f32 = 0.0;
override M22: f32 = 1.0;
override O2: f32 = 0.0;
// Display rotation applied to the picture, in clockwise quarter turns (0..3); a vertex-stage constant.
override ROTATION: u32 = 0u;
// The target stores what it is given (rgba16float); unorm targets clamp to 0..1 themselves.
override CLAMP_OUTPUT: bool = true;
// Antialiased downscale (renderer.antialias_taps): each output pixel is the weighted mean of
// TAPS_X x TAPS_Y samples (each bilinear) spread evenly over a tent two output pixels wide, the
// filter of PIL's and torchvision's antialiased bilinear resize. 1 x 1: one bilinear sample.
override TAPS_X: u32 = 1u;
override TAPS_Y: u32 = 1u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var plane0: texture_2d<f32>;
@group(0) @binding(4) var linear: sampler;

struct VertexOut {
    @builtin(position) position: vec4<f32>,
    // Texture coordinates of the luma and the chroma sample at this pixel (not yet clamped).
    @location(0) luma_uv: vec2<f32>,
    @location(1) chroma_uv: vec2<f32>,
    // Source luma position (index space) at this pixel: fs_rgb's manual filter reads around it.
    @location(2) luma_pos: vec2<f32>,
};

@vertex
fn vs_main(@builtin(vertex_index) index: u32) -> VertexOut {
    // One triangle that covers the viewport: (-1,-1), (3,-1), (-1,3).
    let x = f32(i32(index & 1u) * 4 - 1);
    let y = f32(i32(index >> 1u) * 4 - 1);
    var out: VertexOut;
    out.position = vec4<f32>(x, y, 0.0, 1.0);
    // Output pixel position f (framebuffer units) maps to source luma position
    // src.xy + f * dst_map.xy - 0.5, and f * dst_map.xy = t * src.zw with t the viewport fraction
    // (turned back by the display rotation first).
    let t = unrotate_fraction(vec2<f32>((x + 1.0) * 0.5, (1.0 - y) * 0.5));
    let p = params.src_rect.xy + t * params.src_rect.zw - vec2<f32>(0.5);
    out.luma_uv = (p + vec2<f32>(0.5)) * params.inv_dims.xy;
    out.chroma_uv = (chroma_position(p) + vec2<f32>(0.5)) * params.inv_dims.zw;
    out.luma_pos = p;
    return out;
}

// A point of the displayed (rotated) picture, as fractions of its size -> the same point of the
// decoded picture: ROTATION clockwise quarter turns undone. The shader's only use of the rotation.
fn unrotate_fraction(t: vec2<f32>) -> vec2<f32> {
    if (ROTATION == 1u) {
        return vec2<f32>(t.y, 1.0 - t.x);
    }
    if (ROTATION == 2u) {
        return vec2<f32>(1.0) - t;
    }
    if (ROTATION == 3u) {
        return vec2<f32>(1.0 - t.y, t.x);
    }
    return t;
}

fn clamp_texel(p: vec2<i32>, limits: vec4<i32>) -> vec2<i32> {
    return clamp(p, limits.xy, limits.zw);
}

// Bilinear filter with clamp-to-edge of four textureLoad taps around index-space position `p`.
fn load_bilinear(tex: texture_2d<f32>, p: vec2<f32>, limits: vec4<i32>) -> vec4<f32> {
    let base = floor(p);
    let f = p - base;
    let i0 = vec2<i32>(base);
    let a = textureLoad(tex, clamp_texel(i0, limits), 0);
    let b = textureLoad(tex, clamp_texel(i0 + vec2<i32>(1, 0), limits), 0);
    let c = textureLoad(tex, clamp_texel(i0 + vec2<i32>(0, 1), limits), 0);
    let d = textureLoad(tex, clamp_texel(i0 + vec2<i32>(1, 1), limits), 0);
    return mix(mix(a, b, f.x), mix(c, d, f.x), f.y);
}

fn load_luma(p: vec2<f32>) -> vec4<f32> {
    if (ONE_TO_ONE) {
        // 1:1 mapping: p is integral, one tap is exact.
        return textureLoad(plane0, clamp_texel(vec2<i32>(round(p)), params.luma_clamp), 0);
    }
    return load_bilinear(plane0, p, params.luma_clamp);
}

// The sampled layouts' luma at this pixel: one direct load at 1:1, else one bilinear sample.
fn luma_at(in: VertexOut) -> f32 {
    if (ONE_TO_ONE) {
        if (CLAMP_COORDS) {
            return textureLoad(plane0, clamp_texel(vec2<i32>(round(in.luma_pos)), params.luma_clamp), 0).r;
        }
        // The displayed texels are the whole texture: a 1:1 position is inside it.
        return textureLoad(plane0, vec2<i32>(round(in.luma_pos)), 0).r;
    }
    return sample_clamped(plane0, in.luma_uv, params.luma_bounds).r;
}

// One hardware bilinear sample at texture coordinate `uv`, clamped to the displayed texel centres.
fn sample_clamped(tex: texture_2d<f32>, uv: vec2<f32>, bounds: vec4<f32>) -> vec4<f32> {
    if (CLAMP_COORDS) {
        return textureSampleLevel(tex, linear, clamp(uv, bounds.xy, bounds.zw), 0.0);
    }
    return textureSampleLevel(tex, linear, uv, 0.0);
}

// Where tap i of n lies, in output pixels from the pixel's centre (-1..1), and its tent weight.
fn tap_at(i: u32, n: u32) -> f32 {
    return (f32(i) + 0.5) / f32(n) * 2.0 - 1.0;
}

fn tap_weight(i: u32, n: u32) -> f32 {
    return 1.0 - abs(tap_at(i, n));
}

fn antialiased() -> bool {
    return TAPS_X * TAPS_Y > 1u;
}

// Tap (i, j)'s offset in source luma pixels. The tent's half-width is the scale s (the uniform's
// dst_map: source pixels an output pixel), less the blur of the bilinear taps themselves (a tent one
// source pixel wide): sqrt(s^2 - 1), so that the whole filter's spread is the tent of s alone.
fn tap_offset(i: u32, j: u32) -> vec2<f32> {
    let s = params.dst_map.xy;
    let half_width = sqrt(max(s * s - vec2<f32>(1.0), vec2<f32>(0.0)));
    return vec2<f32>(tap_at(i, TAPS_X), tap_at(j, TAPS_Y)) * half_width;
}

fn tap_weight2(i: u32, j: u32) -> f32 {
    return tap_weight(i, TAPS_X) * tap_weight(j, TAPS_Y);
}

// A luma offset in source pixels as texture coordinates of the luma and of the chroma plane.
fn luma_uv_offset(d: vec2<f32>) -> vec2<f32> {
    return d * params.inv_dims.xy;
}

fn chroma_uv_offset(d: vec2<f32>) -> vec2<f32> {
    return d * params.chroma_map.xy * params.inv_dims.zw;
}

fn chroma_position(p: vec2<f32>) -> vec2<f32> {
    return (p - params.chroma_map.zw) * params.chroma_map.xy;
}

fn to_rgba(samples: vec3<f32>) -> vec4<f32> {
    let rgb = vec3<f32>(
        dot(vec3<f32>(M00, M01, M02), samples) + O0,
        dot(vec3<f32>(M10, M11, M12), samples) + O1,
        dot(vec3<f32>(M20, M21, M22), samples) + O2,
    );
    if (CLAMP_OUTPUT) {
        return vec4<f32>(clamp(rgb, vec3<f32>(0.0), vec3<f32>(1.0)), 1.0);
    }
    return vec4<f32>(rgb, 1.0);
}

@group(0) @binding(2) var plane1: texture_2d<f32>;
@group(0) @binding(3) var plane2: texture_2d<f32>;

// The entry points' bodies are functions, so that the colour-managed entry points
// (yuv_to_rgb_managed.wgsl, a second shader module) run exactly the same sampling and matrix.

// Y plane + interleaved CbCr plane (NV12, P010, NV16, NV24, ...).
fn biplanar_at(in: VertexOut, d: vec2<f32>) -> vec3<f32> {
    let y = sample_clamped(plane0, in.luma_uv + luma_uv_offset(d), params.luma_bounds).r;
    let c = sample_clamped(plane1, in.chroma_uv + chroma_uv_offset(d), params.chroma_bounds).rg;
    return vec3<f32>(y, c);
}

fn biplanar_rgba(in: VertexOut) -> vec4<f32> {
    if (antialiased()) {
        var sum = vec3<f32>(0.0);
        var total = 0.0;
        for (var j = 0u; j < TAPS_Y; j++) {
            for (var i = 0u; i < TAPS_X; i++) {
                let w = tap_weight2(i, j);
                sum += w * biplanar_at(in, tap_offset(i, j));
                total += w;
            }
        }
        return to_rgba(sum / total);
    }
    let y = luma_at(in);
    let c = sample_clamped(plane1, in.chroma_uv, params.chroma_bounds).rg;
    return to_rgba(vec3<f32>(y, c));
}

// Y, Cb, Cr in three single-channel planes (yuv420p, yuv422p10, yuv444p, ...).
fn triplanar_at(in: VertexOut, d: vec2<f32>) -> vec3<f32> {
    let y = sample_clamped(plane0, in.luma_uv + luma_uv_offset(d), params.luma_bounds).r;
    let cuv = in.chroma_uv + chroma_uv_offset(d);
    let cb = sample_clamped(plane1, cuv, params.chroma_bounds).r;
    let cr = sample_clamped(plane2, cuv, params.chroma_bounds).r;
    return vec3<f32>(y, cb, cr);
}

fn triplanar_rgba(in: VertexOut) -> vec4<f32> {
    if (antialiased()) {
        var sum = vec3<f32>(0.0);
        var total = 0.0;
        for (var j = 0u; j < TAPS_Y; j++) {
            for (var i = 0u; i < TAPS_X; i++) {
                let w = tap_weight2(i, j);
                sum += w * triplanar_at(in, tap_offset(i, j));
                total += w;
            }
        }
        return to_rgba(sum / total);
    }
    let y = luma_at(in);
    let cb = sample_clamped(plane1, in.chroma_uv, params.chroma_bounds).r;
    let cr = sample_clamped(plane2, in.chroma_uv, params.chroma_bounds).r;
    return to_rgba(vec3<f32>(y, cb, cr));
}

// Luma only; the neutral chroma is folded into the offset by shader_params().
fn gray_rgba(in: VertexOut) -> vec4<f32> {
    if (antialiased()) {
        var sum = 0.0;
        var total = 0.0;
        for (var j = 0u; j < TAPS_Y; j++) {
            for (var i = 0u; i < TAPS_X; i++) {
                let w = tap_weight2(i, j);
                let uv = in.luma_uv + luma_uv_offset(tap_offset(i, j));
                sum += w * sample_clamped(plane0, uv, params.luma_bounds).r;
                total += w;
            }
        }
        return to_rgba(vec3<f32>(sum / total, 0.0, 0.0));
    }
    let y = luma_at(in);
    return to_rgba(vec3<f32>(y, 0.0, 0.0));
}

// Packed RGB(A) passthrough: the matrix is the identity. value_scale.w is 1 when the format
// carries alpha (the sample's alpha passes through) and 0 when it does not (alpha = 1).
fn rgb_rgba(in: VertexOut) -> vec4<f32> {
    var s: vec4<f32>;
    if (antialiased()) {
        var sum = vec4<f32>(0.0);
        var total = 0.0;
        for (var j = 0u; j < TAPS_Y; j++) {
            for (var i = 0u; i < TAPS_X; i++) {
                let w = tap_weight2(i, j);
                sum += w * load_bilinear(plane0, in.luma_pos + tap_offset(i, j), params.luma_clamp);
                total += w;
            }
        }
        s = sum / total;
    } else {
        s = load_luma(in.luma_pos);
    }
    let rgb = clamp(to_rgba(s.rgb).rgb, vec3<f32>(0.0), vec3<f32>(1.0));
    let a = clamp(s.a * params.value_scale.w + (1.0 - params.value_scale.w), 0.0, 1.0);
    return vec4<f32>(rgb, a);
}

@fragment
fn fs_biplanar(in: VertexOut) -> @location(0) vec4<f32> {
    return biplanar_rgba(in);
}

@fragment
fn fs_triplanar(in: VertexOut) -> @location(0) vec4<f32> {
    return triplanar_rgba(in);
}

@fragment
fn fs_gray(in: VertexOut) -> @location(0) vec4<f32> {
    return gray_rgba(in);
}

@fragment
fn fs_rgb(in: VertexOut) -> @location(0) vec4<f32> {
    return rgb_rgba(in);
}
