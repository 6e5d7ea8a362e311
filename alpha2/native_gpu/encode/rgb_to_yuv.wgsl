// RGB(A) texture -> NV12 / P010 planes in one storage buffer (alpha2.native_gpu.encode).
//
// Layout of `planes` (u32 words, little-endian bytes): the Y plane (height rows of `row_words` words),
// then the interleaved CbCr plane (height / 2 rows of `row_words` words) starting at `uv_word_offset`.
// Rows are padded to 256 bytes so the buffer can be copied to a mappable buffer and read as is.
//
// codes = M @ rgb + offset (rows m0, m1, m2: xyz = matrix row, w = offset), computed for the output's
// matrix, range and bit depth on the CPU (alpha2.gpu.colour.rgb_to_yuv). Chroma is taken from the
// vertical average of each row pair (vertically centred) and, horizontally, either the average of the
// pair (CENTER siting, MPEG-1) or a (1/4, 1/2, 1/4) filter over x-1, x, x+1 (LEFT siting, MPEG-2,
// co-sited with the even column). Edges replicate the outermost texel.

struct Params {
    m0: vec4<f32>,
    m1: vec4<f32>,
    m2: vec4<f32>,
    // width, height (luma texels), row_words (bytes_per_row / 4), uv_word_offset
    size: vec4<u32>,
    // max_code, msb_shift (0 for NV12, 6 for P010), siting (0 = CENTER, 1 = LEFT), unused
    mode: vec4<u32>,
};

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> planes: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;

fn load_rgb(x: i32, y: i32) -> vec3<f32> {
    let w = i32(params.size.x);
    let h = i32(params.size.y);
    let p = vec2<i32>(clamp(x, 0, w - 1), clamp(y, 0, h - 1));
    return clamp(textureLoad(src, p, 0).rgb, vec3<f32>(0.0), vec3<f32>(1.0));
}

fn to_code(v: f32) -> u32 {
    let max_code = f32(params.mode.x);
    return u32(clamp(floor(v + 0.5), 0.0, max_code)) << params.mode.y;
}

fn luma(rgb: vec3<f32>) -> u32 {
    return to_code(dot(params.m0.xyz, rgb) + params.m0.w);
}

// (Cb, Cr) codes of the chroma sample at even luma column x, from the row-pair averages of
// columns x - 1, x, x + 1 (`left`, `here`, `right`).
fn chroma(left: vec3<f32>, here: vec3<f32>, right: vec3<f32>) -> vec2<u32> {
    var rgb: vec3<f32>;
    if (params.mode.z == 1u) {
        rgb = 0.25 * left + 0.5 * here + 0.25 * right;
    } else {
        rgb = 0.5 * (here + right);
    }
    return vec2<u32>(
        to_code(dot(params.m1.xyz, rgb) + params.m1.w),
        to_code(dot(params.m2.xyz, rgb) + params.m2.w),
    );
}

// NV12: one invocation = 4 luma columns x 2 rows -> two Y words and one CbCr word (2 chroma pairs).
@compute @workgroup_size(8, 8)
fn nv12_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let x0 = i32(gid.x) * 4;
    let y0 = i32(gid.y) * 2;
    if (x0 >= i32(params.size.x) || y0 >= i32(params.size.y)) {
        return;
    }
    let row_words = params.size.z;
    var top: array<vec3<f32>, 5>;
    var bottom: array<vec3<f32>, 5>;
    for (var i = 0; i < 5; i++) {
        top[i] = load_rgb(x0 - 1 + i, y0);
        bottom[i] = load_rgb(x0 - 1 + i, y0 + 1);
    }
    let w_top = luma(top[1]) | (luma(top[2]) << 8u) | (luma(top[3]) << 16u) | (luma(top[4]) << 24u);
    let w_bot = luma(bottom[1]) | (luma(bottom[2]) << 8u) | (luma(bottom[3]) << 16u)
        | (luma(bottom[4]) << 24u);
    planes[u32(y0) * row_words + gid.x] = w_top;
    planes[u32(y0 + 1) * row_words + gid.x] = w_bot;

    var col: array<vec3<f32>, 5>;
    for (var i = 0; i < 5; i++) {
        col[i] = 0.5 * (top[i] + bottom[i]);
    }
    let c0 = chroma(col[0], col[1], col[2]);
    let c1 = chroma(col[2], col[3], col[4]);
    planes[params.size.w + gid.y * row_words + gid.x] = c0.x | (c0.y << 8u) | (c1.x << 16u) | (c1.y << 24u);
}

// P010: one invocation = 2 luma columns x 2 rows -> two Y words and one CbCr word (1 chroma pair),
// 16 bits per component with the 10 significant bits at the top.
@compute @workgroup_size(8, 8)
fn p010_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let x0 = i32(gid.x) * 2;
    let y0 = i32(gid.y) * 2;
    if (x0 >= i32(params.size.x) || y0 >= i32(params.size.y)) {
        return;
    }
    let row_words = params.size.z;
    var top: array<vec3<f32>, 3>;
    var bottom: array<vec3<f32>, 3>;
    for (var i = 0; i < 3; i++) {
        top[i] = load_rgb(x0 - 1 + i, y0);
        bottom[i] = load_rgb(x0 - 1 + i, y0 + 1);
    }
    planes[u32(y0) * row_words + gid.x] = luma(top[1]) | (luma(top[2]) << 16u);
    planes[u32(y0 + 1) * row_words + gid.x] = luma(bottom[1]) | (luma(bottom[2]) << 16u);
    let c = chroma(0.5 * (top[0] + bottom[0]), 0.5 * (top[1] + bottom[1]), 0.5 * (top[2] + bottom[2]));
    planes[params.size.w + gid.y * row_words + gid.x] = c.x | (c.y << 16u);
}
