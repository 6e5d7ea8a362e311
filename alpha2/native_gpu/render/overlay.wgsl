// alpha2 overlay: an RGBA image (straight alpha, sRGB-encoded values) alpha-blended over a render
// target at a pixel rectangle, one texel per target pixel (the on-screen display, subtitles).

struct Placement {
    // x, y (top-left corner) and width, height of the image in target pixels
    rect: vec4<f32>,
    // the target's width and height in pixels
    target_size: vec2<f32>,
    // multiplies the image's alpha (a fading display)
    opacity: f32,
    // 1: the target encodes to sRGB on write (an -srgb format): the values are decoded first so that
    // what is stored is the image's own sRGB value
    srgb_target: f32,
};

@group(0) @binding(0) var image: texture_2d<f32>;
@group(0) @binding(1) var<uniform> placement: Placement;

@vertex
fn vs_main(@builtin(vertex_index) index: u32) -> @builtin(position) vec4<f32> {
    var corners = array<vec2<f32>, 6>(
        vec2<f32>(0.0, 0.0), vec2<f32>(1.0, 0.0), vec2<f32>(0.0, 1.0),
        vec2<f32>(0.0, 1.0), vec2<f32>(1.0, 0.0), vec2<f32>(1.0, 1.0),
    );
    let pixel = placement.rect.xy + corners[index] * placement.rect.zw;
    let ndc = vec2<f32>(
        pixel.x / placement.target_size.x * 2.0 - 1.0,
        1.0 - pixel.y / placement.target_size.y * 2.0,
    );
    return vec4<f32>(ndc, 0.0, 1.0);
}

fn srgb_to_linear(c: vec3<f32>) -> vec3<f32> {
    let low = c / 12.92;
    let high = pow((c + 0.055) / 1.055, vec3<f32>(2.4));
    return select(high, low, c <= vec3<f32>(0.04045));
}

@fragment
fn fs_main(@builtin(position) position: vec4<f32>) -> @location(0) vec4<f32> {
    let size = vec2<i32>(textureDimensions(image));
    let texel = clamp(vec2<i32>(floor(position.xy - placement.rect.xy)), vec2<i32>(0), size - vec2<i32>(1));
    let colour = textureLoad(image, texel, 0);
    var rgb = colour.rgb;
    if (placement.srgb_target > 0.5) {
        rgb = srgb_to_linear(rgb);
    }
    return vec4<f32>(rgb, colour.a * placement.opacity);
}
