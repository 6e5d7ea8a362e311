// Decoded YUV plane textures -> NV12 / P010 planes at the output size, in one compute pass
// (alpha2.native_gpu.encode, EncodeCopier.submit_planes). No RGB texture in between.
//
// Output layout (u32 words, little-endian bytes) is the one rgb_to_yuv.wgsl writes: the Y plane
// (height rows of `row_words` words), then the interleaved CbCr plane (height / 2 rows) starting at
// `uv_word_offset`; rows padded to 256 bytes.
//
// Colour: out codes = M @ [Y, Cb, Cr] + offset on the normalised texture samples (rows m0, m1, m2:
// xyz = matrix row, w = offset). The CPU composes it: sample -> input codes -> R'G'B' -> output codes
// (alpha2.gpu.colour). It is affine, so it commutes with bilinear filtering: filter first, then convert.
//
// Geometry ("index space", as in yuv_to_rgb.wgsl): luma sample (i, j) sits at (i, j); output pixel o maps
// to source luma position src.xy + q * src.zw - 0.5, where q is o + 0.5 turned back by the display
// rotation (ROTATION; q = o + 0.5 without one) into the output's unrotated axes; input chroma sample
// (k, l) sits at luma position (k * sx + off_x, l * sy + off_y). Positions are clamped to the displayed
// texels before the (clamp-to-edge, bilinear) sampler reads them, so padding never bleeds in.
//
// Downscaling: one bilinear sample per output sample is point sampling at 3x (aliasing, and noise the
// encoder pays for), so each output sample averages a grid of bilinear taps spread evenly over its
// footprint: FOOTPRINT output pixels for luma (alpha2.native_gpu.encode.params.DOWNSCALE_FOOTPRINT),
// twice that for chroma (its 2 x 2 block). Over exactly one pixel it would be an area (box) filter; the
// little extra width gives the neighbours' nearest texels a small weight, which keeps fine grain from
// aliasing at no extra read. The tap counts are pipeline constants (1 x 1 when not downscaling: the
// single sample of before, at no extra cost).
//
// One invocation writes whole words: NV12 4 x 2 output pixels (two Y words, one CbCr word with two
// chroma pairs); P010 2 x 2 (two Y words, one CbCr word). Each output luma sample reads luma at its own
// position; each output chroma sample reads chroma at its output chroma site (LEFT: the left column,
// vertically centred; CENTER: the block centre).
// Where the matrix mixes the other plane in (a matrix change), the mixed-in values are shared within the
// block rather than sampled per pixel, as swscale's own conversions work at chroma resolution: the
// chroma a luma sample needs is read at the even output columns of the block's row centre and
// interpolated half-way for the odd ones (for LEFT siting those reads are the chroma outputs' own); the
// luma a chroma sample needs is interpolated from the block's luma reads at the chroma site. Compared
// with per-pixel reads this halves the texture reads, the cost that dominates on lavapipe, and differs
// only at sharp chroma edges, by a fraction of the matrix's small cross terms.

struct Params {
    m0: vec4<f32>,
    m1: vec4<f32>,
    m2: vec4<f32>,
    // .xy: source crop origin (luma pixels); .zw: source luma pixels per output pixel (unrotated axes).
    src: vec4<f32>,
    // .xy: chroma samples per luma sample (1 / sx, 1 / sy); .zw: input siting offset (luma pixels).
    chroma_map: vec4<f32>,
    // .xy: output chroma site relative to the top-left pixel of its 2 x 2 block (output pixels).
    out_site: vec4<f32>,
    // Inclusive texel ranges that may be read: min x, min y, max x, max y.
    luma_clamp: vec4<f32>,
    chroma_clamp: vec4<f32>,
    // width, height (output luma), row_words (bytes_per_row / 4), uv_word_offset
    size: vec4<u32>,
    // max_code, msb_shift (0 for NV12, 6 for P010), unused, unused
    mode: vec4<u32>,
};

// Pipeline constants (one pipeline per combination: the compiler drops the reads a case does not need;
// a uniform branch instead costs more than the reads it skips on lavapipe).
// Tri-planar input (Y, Cb, Cr planes); false: bi-planar (Y, interleaved CbCr; bound twice).
override TRIPLANAR: bool = false;
// The output luma depends on the input chroma (a matrix change).
override LUMA_READS_CHROMA: bool = true;
// The output chroma depends on the input luma.
override CHROMA_READS_LUMA: bool = true;
// The output chroma site is the left column of its block, vertically centred (LEFT / MPEG-2 siting).
override LEFT_SITED: bool = true;
// Display rotation applied to the picture, in clockwise quarter turns (0..3).
override ROTATION: u32 = 0u;
// Taps per output sample along the output's x and y, for luma and for chroma (1: one bilinear sample).
override LUMA_TAPS_X: u32 = 1u;
override LUMA_TAPS_Y: u32 = 1u;
override CHROMA_TAPS_X: u32 = 1u;
override CHROMA_TAPS_Y: u32 = 1u;
// Width of the taps' spread, in output pixels (luma; chroma twice that). No default: always given.
override FOOTPRINT: f32;

@group(0) @binding(0) var luma_tex: texture_2d<f32>;
@group(0) @binding(1) var chroma_tex: texture_2d<f32>;
@group(0) @binding(2) var cr_tex: texture_2d<f32>;
@group(0) @binding(3) var bilinear: sampler;
@group(0) @binding(4) var<storage, read_write> planes: array<u32>;
@group(0) @binding(5) var<uniform> params: Params;

// Output position q (output pixels, displayed axes) -> the same point in the unrotated output's axes.
fn unrotate(q: vec2<f32>) -> vec2<f32> {
    let size = vec2<f32>(params.size.xy);
    if (ROTATION == 1u) {
        return vec2<f32>(q.y, size.x - q.x);
    }
    if (ROTATION == 2u) {
        return size - q;
    }
    if (ROTATION == 3u) {
        return vec2<f32>(size.y - q.y, q.x);
    }
    return q;
}

// -- Colour step (alpha2.native_gpu.encode.params.colour_step_bytes; colour_manage.wgsl is prepended) --
// When the output's transfer or primaries differ from the input's (HDR -> SDR tone mapping), m0..m2
// are the input's samples -> R'G'B' only; the chain maps R'G'B' to the output's and out0..out2 (the
// output's rgb_to_yuv, in codes) finish the job. It is not affine, so it runs per output sample on the
// filtered Y'CbCr (the sampling code below is unchanged).
override COLOUR_MANAGED: bool = false;

struct ColourStep {
    manage: ColourManage,
    out0: vec4<f32>,
    out1: vec4<f32>,
    out2: vec4<f32>,
};

@group(0) @binding(6) var<uniform> colour_step: ColourStep;

// Output (Y, Cb, Cr) codes (unrounded) of the filtered input samples, through the colour chain.
fn managed_codes(y: f32, cbcr: vec2<f32>) -> vec3<f32> {
    let yuv = vec3<f32>(y, cbcr);
    let rgb = vec3<f32>(
        dot(params.m0.xyz, yuv) + params.m0.w,
        dot(params.m1.xyz, yuv) + params.m1.w,
        dot(params.m2.xyz, yuv) + params.m2.w,
    );
    let out = colour_manage(clamp(rgb, vec3<f32>(0.0), vec3<f32>(1.0)), colour_step.manage);
    return vec3<f32>(
        dot(colour_step.out0.xyz, out) + colour_step.out0.w,
        dot(colour_step.out1.xyz, out) + colour_step.out1.w,
        dot(colour_step.out2.xyz, out) + colour_step.out2.w,
    );
}

fn source_position(o: vec2<f32>) -> vec2<f32> {
    return params.src.xy + unrotate(o + vec2<f32>(0.5)) * params.src.zw - vec2<f32>(0.5);
}

// Offset of tap (i, j) of an n.x x n.y grid spread evenly over `extent` output pixels, times FOOTPRINT.
fn tap_offset(i: u32, j: u32, n: vec2<u32>, extent: f32) -> vec2<f32> {
    let spread = extent * FOOTPRINT;
    return ((vec2<f32>(f32(i), f32(j)) + vec2<f32>(0.5)) / vec2<f32>(n) - vec2<f32>(0.5)) * spread;
}

fn sample_luma(p: vec2<f32>, inv_size: vec2<f32>) -> f32 {
    let q = clamp(p, params.luma_clamp.xy, params.luma_clamp.zw);
    return textureSampleLevel(luma_tex, bilinear, (q + vec2<f32>(0.5)) * inv_size, 0.0).r;
}

fn sample_cbcr(p: vec2<f32>, inv_size: vec2<f32>) -> vec2<f32> {
    let q = clamp((p - params.chroma_map.zw) * params.chroma_map.xy, params.chroma_clamp.xy,
        params.chroma_clamp.zw);
    let uv = (q + vec2<f32>(0.5)) * inv_size;
    if (TRIPLANAR) {
        return vec2<f32>(
            textureSampleLevel(chroma_tex, bilinear, uv, 0.0).r,
            textureSampleLevel(cr_tex, bilinear, uv, 0.0).r,
        );
    }
    return textureSampleLevel(chroma_tex, bilinear, uv, 0.0).rg;
}

fn to_code(v: f32) -> u32 {
    return u32(clamp(floor(v + 0.5), 0.0, f32(params.mode.x))) << params.mode.y;
}

// Chroma of the output chroma sample at `o`: the mean of its taps over the 2 x 2 output block.
fn chroma_at(o: vec2<f32>, inv_chroma: vec2<f32>) -> vec2<f32> {
    let n = vec2<u32>(CHROMA_TAPS_X, CHROMA_TAPS_Y);
    var sum = vec2<f32>(0.0);
    for (var j = 0u; j < n.y; j++) {
        for (var i = 0u; i < n.x; i++) {
            sum += sample_cbcr(source_position(o + tap_offset(i, j, n, 2.0)), inv_chroma);
        }
    }
    return sum / f32(n.x * n.y);
}

// Luma of output pixel `o`: the mean of its taps over the pixel.
fn luma_at(o: vec2<f32>, inv_luma: vec2<f32>) -> f32 {
    let n = vec2<u32>(LUMA_TAPS_X, LUMA_TAPS_Y);
    var sum = 0.0;
    for (var j = 0u; j < n.y; j++) {
        for (var i = 0u; i < n.x; i++) {
            sum += sample_luma(source_position(o + tap_offset(i, j, n, 1.0)), inv_luma);
        }
    }
    return sum / f32(n.x * n.y);
}

// Output Y code from the luma sample and the chroma at the same place (used only for a matrix change).
fn y_code(y: f32, cbcr: vec2<f32>) -> u32 {
    if (COLOUR_MANAGED) {
        return to_code(managed_codes(y, cbcr).x);
    }
    var v = params.m0.x * y + params.m0.w;
    if (LUMA_READS_CHROMA) {
        v += dot(params.m0.yz, cbcr);
    }
    return to_code(v);
}

// Output (Cb, Cr) codes from the chroma sample and the luma at its site (m1.x, m2.x are 0 unless a
// matrix change mixes luma into chroma).
fn c_codes(y: f32, cbcr: vec2<f32>) -> vec2<u32> {
    if (COLOUR_MANAGED) {
        let codes = managed_codes(y, cbcr);
        return vec2<u32>(to_code(codes.y), to_code(codes.z));
    }
    let yuv = vec3<f32>(y, cbcr);
    return vec2<u32>(
        to_code(dot(params.m1.xyz, yuv) + params.m1.w),
        to_code(dot(params.m2.xyz, yuv) + params.m2.w),
    );
}

// Luma at a chroma site `f` (0..1 within the 2 x 2 block whose luma samples are y00, y10, y01, y11).
fn luma_at_site(y00: f32, y10: f32, y01: f32, y11: f32, f: vec2<f32>) -> f32 {
    return mix(mix(y00, y10, f.x), mix(y01, y11, f.x), f.y);
}

@compute @workgroup_size(8, 8)
fn nv12_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let x0 = gid.x * 4u;
    let y0 = gid.y * 2u;
    if (x0 >= params.size.x || y0 >= params.size.y) {
        return;
    }
    let inv_luma = vec2<f32>(1.0) / vec2<f32>(textureDimensions(luma_tex));
    let inv_chroma = vec2<f32>(1.0) / vec2<f32>(textureDimensions(chroma_tex));
    let row_words = params.size.z;
    let o = vec2<f32>(f32(x0), f32(y0));
    var ys: array<f32, 8>;
    for (var j = 0u; j < 2u; j++) {
        for (var i = 0u; i < 4u; i++) {
            ys[j * 4u + i] = luma_at(o + vec2<f32>(f32(i), f32(j)), inv_luma);
        }
    }
    let site = params.out_site.xy;
    let s0 = chroma_at(o + site, inv_chroma);
    let s1 = chroma_at(o + vec2<f32>(2.0, 0.0) + site, inv_chroma);
    var cols = array<vec2<f32>, 4>(vec2<f32>(0.0), vec2<f32>(0.0), vec2<f32>(0.0), vec2<f32>(0.0));
    if (LUMA_READS_CHROMA) {
        var a = s0;
        var b = s1;
        if (!LEFT_SITED) {
            a = chroma_at(o + vec2<f32>(0.0, 0.5), inv_chroma);
            b = chroma_at(o + vec2<f32>(2.0, 0.5), inv_chroma);
        }
        let c = chroma_at(o + vec2<f32>(4.0, 0.5), inv_chroma);
        cols = array<vec2<f32>, 4>(a, 0.5 * (a + b), b, 0.5 * (b + c));
    }
    for (var j = 0u; j < 2u; j++) {
        var word = 0u;
        for (var i = 0u; i < 4u; i++) {
            word |= y_code(ys[j * 4u + i], cols[i]) << (8u * i);
        }
        planes[(y0 + j) * row_words + gid.x] = word;
    }
    var l0 = 0.0;
    var l1 = 0.0;
    if (CHROMA_READS_LUMA) {
        l0 = luma_at_site(ys[0], ys[1], ys[4], ys[5], site);
        l1 = luma_at_site(ys[2], ys[3], ys[6], ys[7], site);
    }
    let c0 = c_codes(l0, s0);
    let c1 = c_codes(l1, s1);
    planes[params.size.w + gid.y * row_words + gid.x] = c0.x | (c0.y << 8u) | (c1.x << 16u) | (c1.y << 24u);
}

@compute @workgroup_size(8, 8)
fn p010_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let x0 = gid.x * 2u;
    let y0 = gid.y * 2u;
    if (x0 >= params.size.x || y0 >= params.size.y) {
        return;
    }
    let inv_luma = vec2<f32>(1.0) / vec2<f32>(textureDimensions(luma_tex));
    let inv_chroma = vec2<f32>(1.0) / vec2<f32>(textureDimensions(chroma_tex));
    let row_words = params.size.z;
    let o = vec2<f32>(f32(x0), f32(y0));
    let y00 = luma_at(o, inv_luma);
    let y10 = luma_at(o + vec2<f32>(1.0, 0.0), inv_luma);
    let y01 = luma_at(o + vec2<f32>(0.0, 1.0), inv_luma);
    let y11 = luma_at(o + vec2<f32>(1.0, 1.0), inv_luma);
    let site = params.out_site.xy;
    let s = chroma_at(o + site, inv_chroma);
    var a = vec2<f32>(0.0);
    var b = vec2<f32>(0.0);
    if (LUMA_READS_CHROMA) {
        a = s;
        if (!LEFT_SITED) {
            a = chroma_at(o + vec2<f32>(0.0, 0.5), inv_chroma);
        }
        b = 0.5 * (a + chroma_at(o + vec2<f32>(2.0, 0.5), inv_chroma));
    }
    planes[y0 * row_words + gid.x] = y_code(y00, a) | (y_code(y10, b) << 16u);
    planes[(y0 + 1u) * row_words + gid.x] = y_code(y01, a) | (y_code(y11, b) << 16u);
    var l = 0.0;
    if (CHROMA_READS_LUMA) {
        l = luma_at_site(y00, y10, y01, y11, site);
    }
    let c = c_codes(l, s);
    planes[params.size.w + gid.y * row_words + gid.x] = c.x | (c.y << 16u);
}
