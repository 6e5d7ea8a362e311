// Rendered RGBA frames -> the bytes of an RGB tensor (HWC or CHW; uint8, float16 or float32).
//
// The tensor of a batch is one run of 32-bit words: element g of the stacked (N, ...) tensor is
// element g % E of word g / E (E = 4 uint8, 2 float16 or 1 float32 elements a word, low bits
// first: the little-endian byte order of the array). One dispatch a frame writes the words whose
// first element belongs to its frame; the last of them may also hold the first elements of the next
// frame (uint8 and float16 frames need not end on a word), read from `next_frame`. So every word is
// written whole, by one invocation, and no storage-format feature is needed: the words go to an
// array<u32> (read back on the CPU) or to an rgba8uint storage texture, a word a texel (shared with
// CUDA), through `store_word`, which tensor.py appends (one of two small snippets).
//
// Values are the 8-bit codes of the rendered texture (rgba8unorm): uint8 writes the code itself;
// float16 and float32 look the code up in `table` (256 entries a channel, filled on the CPU from
// (code / 255 - mean[c]) / std[c], rounded to the dtype there), so the floats are exact transforms of
// the uint8 tensor, on any GPU.

struct Params {
    // The rendered picture's size (the tensor's W and H).
    width: u32,
    height: u32,
    // Element of this frame that the dispatch's first word starts with (0 .. E - 1).
    lead: u32,
    // Words this dispatch writes.
    words: u32,
    // 1 when `next_frame` holds the next frame of the batch; 0: elements past this frame are 0.
    has_next: u32,
    // Index of the dispatch's first word in the output.
    out_base: u32,
    // Texture output: words a row of the storage texture holds.
    row_words: u32,
    pad: u32,
};

// 0: HWC, 1: CHW.
override LAYOUT: u32 = 0u;
// 0: uint8, 1: float16, 2: float32.
override DTYPE: u32 = 0u;

const WORKGROUP: u32 = 64u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var frame: texture_2d<f32>;
@group(0) @binding(2) var next_frame: texture_2d<f32>;
@group(0) @binding(3) var<storage, read> table: array<u32>;

fn elements_per_word() -> u32 {
    if (DTYPE == 0u) {
        return 4u;
    }
    if (DTYPE == 1u) {
        return 2u;
    }
    return 1u;
}

// The bits of local element `index` of the frame (index >= one frame: of the next frame).
fn element_bits(index: u32) -> u32 {
    let frame_elements = params.width * params.height * 3u;
    var local = index;
    var in_next = false;
    if (local >= frame_elements) {
        if (params.has_next == 0u) {
            return 0u;
        }
        local = local - frame_elements;
        in_next = true;
    }
    var x: u32;
    var y: u32;
    var c: u32;
    if (LAYOUT == 0u) {
        let pixel = local / 3u;
        c = local % 3u;
        y = pixel / params.width;
        x = pixel % params.width;
    } else {
        let plane = params.width * params.height;
        c = local / plane;
        let rest = local % plane;
        y = rest / params.width;
        x = rest % params.width;
    }
    var texel: vec4<f32>;
    if (in_next) {
        texel = textureLoad(next_frame, vec2<u32>(x, y), 0);
    } else {
        texel = textureLoad(frame, vec2<u32>(x, y), 0);
    }
    let code = u32(round(clamp(texel[c], 0.0, 1.0) * 255.0));
    if (DTYPE == 0u) {
        return code;
    }
    return table[c * 256u + code];
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = id.x + id.y * groups.x * WORKGROUP;
    if (i >= params.words) {
        return;
    }
    let per_word = elements_per_word();
    let bits = 32u / per_word;
    var word = 0u;
    for (var j = 0u; j < per_word; j = j + 1u) {
        word = word | (element_bits(params.lead + i * per_word + j) << (j * bits));
    }
    store_word(params.out_base + i, word);
}
