// Colour-managed entry points of the sampling shader (alpha2.native_gpu.render.renderer).
//
// A second shader module: colour_manage.wgsl + yuv_to_rgb.wgsl + this file. The plain module has no
// colour binding at all, so an identity (source colour = target) keeps today's exact pipeline. Here
// each pixel's R'G'B' (after the Y'CbCr matrix, clipped to 0..1 as the numpy reference expects) goes
// through the chain: decode the source transfer, convert primaries, tone map, map the gamut, encode
// the target transfer. The uniform is packed by colour_params.py from the same plan the numpy
// reference (alpha2.gpu.colour_manage.apply_plan) runs.

@group(0) @binding(5) var<uniform> colour: ColourManage;

fn managed(rgba: vec4<f32>) -> vec4<f32> {
    let rgb = clamp(rgba.rgb, vec3<f32>(0.0), vec3<f32>(1.0));
    return vec4<f32>(colour_manage(rgb, colour), rgba.a);
}

@fragment
fn fs_biplanar_managed(in: VertexOut) -> @location(0) vec4<f32> {
    return managed(biplanar_rgba(in));
}

@fragment
fn fs_triplanar_managed(in: VertexOut) -> @location(0) vec4<f32> {
    return managed(triplanar_rgba(in));
}

@fragment
fn fs_gray_managed(in: VertexOut) -> @location(0) vec4<f32> {
    return managed(gray_rgba(in));
}

@fragment
fn fs_rgb_managed(in: VertexOut) -> @location(0) vec4<f32> {
    return managed(rgb_rgba(in));
}
