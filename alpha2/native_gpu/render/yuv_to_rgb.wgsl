// YUV planes -> RGB, one full-screen triangle per frame (alpha2.native_gpu.render.renderer).
//
// Y'CbCr planes (r8/rg8/r16/rg16 unorm, all filterable) are read through a linear sampler: one
// hardware bilinear sample per plane per pixel, where a manual filter costs four textureLoads (and
// on lavapipe each load is several times the cost of the arithmetic). The position is clamped to
// the centres of the displayed texels first, so clamp-to-edge happens at the edge of the picture,
// not of the (possibly padded) texture, and the chroma sample sits exactly where the frame's siting
// says. At 1:1 the luma is one exact textureLoad. Packed RGB planes (rgba32float among them, not
// filterable everywhere) keep textureLoad and a manual filter: fs_rgb binds no sampler.
//
// Coordinates are "index space": luma sample (i, j) sits at (i, j). Chroma sample (k, l)
// sits at luma position (k * sx + off_x, l * sy + off_y), with sx, sy the subsampling factors
// and off_x, off_y the siting offset (LEFT 4:2:0: off = (0, 0.5); CENTER: (0.5, 0.5)).

struct Params {
    // rgb01 = M @ codes + offset; row r of M in .xyz, offset[r] in .w.
    row0: vec4<f32>,
    row1: vec4<f32>,
    row2: vec4<f32>,
    // Normalized sample -> integer code, per plane (Y, Cb, Cr) and alpha (.w).
    value_scale: vec4<f32>,
    // .xy: chroma samples per luma sample (1 / sx, 1 / sy); .zw: siting offset in luma pixels.
    chroma_map: vec4<f32>,
    // Source crop in luma pixels: x, y, width, height.
    src_rect: vec4<f32>,
    // .xy: source luma pixels per output pixel; .z: 1.0 when that is exactly 1 (the ONE_TO_ONE pipeline).
    dst_map: vec4<f32>,
    // Clamp ranges (inclusive) in texels: luma min x, min y, max x, max y.
    luma_clamp: vec4<i32>,
    // Chroma plane: min x, min y, max x, max y.
    chroma_clamp: vec4<i32>,
};

// Each output pixel is exactly one source luma pixel (dst_map.z of the uniform block, made a pipeline
// constant): one pipeline per case. A uniform branch between a textureLoad and a sampled arm makes
// lavapipe build a new shader variant on every draw (about 0.4 MB of memory and 5 ms a frame).
override ONE_TO_ONE: bool = false;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var plane0: texture_2d<f32>;
@group(0) @binding(4) var linear: sampler;

struct VertexOut {
    @builtin(position) position: vec4<f32>,
};

@vertex
fn vs_main(@builtin(vertex_index) index: u32) -> VertexOut {
    // One triangle that covers the viewport: (-1,-1), (3,-1), (-1,3).
    let x = f32(i32(index & 1u) * 4 - 1);
    let y = f32(i32(index >> 1u) * 4 - 1);
    var out: VertexOut;
    out.position = vec4<f32>(x, y, 0.0, 1.0);
    return out;
}

// Source luma position (index space) of the output fragment at `frag` (pixel centre coordinates).
fn source_position(frag: vec2<f32>) -> vec2<f32> {
    return params.src_rect.xy + frag * params.dst_map.xy - vec2<f32>(0.5, 0.5);
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

// One hardware bilinear sample of `tex` at index-space position `p`, clamped to the texel centres
// of `limits` (so the filter never reaches past the displayed texels).
fn sample_clamped(tex: texture_2d<f32>, p: vec2<f32>, limits: vec4<i32>) -> vec4<f32> {
    let q = clamp(p, vec2<f32>(limits.xy), vec2<f32>(limits.zw));
    let uv = (q + vec2<f32>(0.5)) / vec2<f32>(textureDimensions(tex));
    return textureSampleLevel(tex, linear, uv, 0.0);
}

fn load_luma(p: vec2<f32>) -> vec4<f32> {
    if (ONE_TO_ONE) {
        // 1:1 mapping: p is integral, one tap is exact.
        return textureLoad(plane0, clamp_texel(vec2<i32>(round(p)), params.luma_clamp), 0);
    }
    return load_bilinear(plane0, p, params.luma_clamp);
}

fn sample_luma(p: vec2<f32>) -> f32 {
    if (ONE_TO_ONE) {
        return textureLoad(plane0, clamp_texel(vec2<i32>(round(p)), params.luma_clamp), 0).r;
    }
    return sample_clamped(plane0, p, params.luma_clamp).r;
}

fn chroma_position(p: vec2<f32>) -> vec2<f32> {
    return (p - params.chroma_map.zw) * params.chroma_map.xy;
}

fn to_rgba(codes: vec3<f32>) -> vec4<f32> {
    let rgb = vec3<f32>(
        dot(params.row0.xyz, codes) + params.row0.w,
        dot(params.row1.xyz, codes) + params.row1.w,
        dot(params.row2.xyz, codes) + params.row2.w,
    );
    return vec4<f32>(clamp(rgb, vec3<f32>(0.0), vec3<f32>(1.0)), 1.0);
}

@group(0) @binding(2) var plane1: texture_2d<f32>;
@group(0) @binding(3) var plane2: texture_2d<f32>;

// Y plane + interleaved CbCr plane (NV12, P010, NV16, NV24, ...).
@fragment
fn fs_biplanar(in: VertexOut) -> @location(0) vec4<f32> {
    let p = source_position(in.position.xy);
    let y = sample_luma(p) * params.value_scale.x;
    let c = sample_clamped(plane1, chroma_position(p), params.chroma_clamp).rg * params.value_scale.yz;
    return to_rgba(vec3<f32>(y, c));
}

// Y, Cb, Cr in three single-channel planes (yuv420p, yuv422p10, yuv444p, ...).
@fragment
fn fs_triplanar(in: VertexOut) -> @location(0) vec4<f32> {
    let p = source_position(in.position.xy);
    let y = sample_luma(p) * params.value_scale.x;
    let q = chroma_position(p);
    let cb = sample_clamped(plane1, q, params.chroma_clamp).r * params.value_scale.y;
    let cr = sample_clamped(plane2, q, params.chroma_clamp).r * params.value_scale.z;
    return to_rgba(vec3<f32>(y, cb, cr));
}

// Luma only; the neutral chroma is folded into the offset by shader_params().
@fragment
fn fs_gray(in: VertexOut) -> @location(0) vec4<f32> {
    let p = source_position(in.position.xy);
    let y = sample_luma(p) * params.value_scale.x;
    return to_rgba(vec3<f32>(y, 0.0, 0.0));
}

// Packed RGB(A) passthrough: the matrix is the identity. value_scale.w is 1 when the format
// carries alpha (the sample's alpha passes through) and 0 when it does not (alpha = 1).
@fragment
fn fs_rgb(in: VertexOut) -> @location(0) vec4<f32> {
    let p = source_position(in.position.xy);
    let s = load_luma(p);
    let rgb = to_rgba(s.rgb * params.value_scale.xyz).rgb;
    let a = clamp(s.a * params.value_scale.w + (1.0 - params.value_scale.w), 0.0, 1.0);
    return vec4<f32>(rgb, a);
}
