// Colour management, functions only: concatenated ahead of a sampling shader, which declares its own
// `var<uniform>` of type ColourManage (packed by colour_params.py) and calls
// `colour_manage(rgb, params)` on non-linear source R'G'B' (0..1) to get target R'G'B' (0..1).
// The numpy reference is alpha2.gpu.colour_manage.apply_plan; the constants come from the same plan.
// Linear light is relative: 1.0 = HDR reference white = SDR white = 203 cd/m² (BT.2408).

struct ColourManage {
    // Linear source RGB -> linear target RGB.
    primaries: mat3x3<f32>,
    // Linear target RGB -> linear source RGB (SOFT gamut mapping).
    target_to_source: mat3x3<f32>,
    // xyz: luminance row of the source primaries; w: HLG display peak in cd/m².
    source_luma: vec4<f32>,
    // xyz: luminance row of the target primaries; w: HLG system gamma.
    target_luma: vec4<f32>,
    // source peak (PQ), target peak (PQ), knee (BT.2390: KS normalised; spline: pivot in PQ), maxLum.
    tone: vec4<f32>,
    // spline Qa, spline Qb, target peak (relative), encode scale (SDR: 203 / target peak).
    tone_extra: vec4<f32>,
    // x: SOFT gamut knee.
    gamut: vec4<f32>,
    // source curve, target curve, tone curve, tone mode (alpha2.gpu TransferCurve / ToneCurve / ToneMode).
    ids: vec4<u32>,
    // gamut mapping (GamutMapping), identity (1: pass through), tone active (1: compress), unused.
    flags: vec4<u32>,
}

// The plan's ids as pipeline constants, so that the compiler drops the cases a pipeline never takes
// (on lavapipe a switch on a uniform runs every case's maths for every pixel). CM_FROM_UNIFORM (the
// default): read the uniform's ids instead. Set by the renderer from the same plan as the uniform.
const CM_FROM_UNIFORM: u32 = 255u;
override CM_SOURCE_CURVE: u32 = 255u;
override CM_TARGET_CURVE: u32 = 255u;
override CM_TONE_CURVE: u32 = 255u;
override CM_TONE_MODE: u32 = 255u;
override CM_GAMUT_MAPPING: u32 = 255u;
override CM_TONE_ACTIVE: u32 = 255u;

fn cm_id(fixed: u32, from_uniform: u32) -> u32 {
    return select(from_uniform, fixed, fixed != CM_FROM_UNIFORM);
}

const CM_REFERENCE_WHITE: f32 = 203.0;
const CM_PQ_M1: f32 = 0.1593017578125;
const CM_PQ_M2: f32 = 78.84375;
const CM_PQ_C1: f32 = 0.8359375;
const CM_PQ_C2: f32 = 18.8515625;
const CM_PQ_C3: f32 = 18.6875;
const CM_HLG_A: f32 = 0.17883277;
const CM_HLG_B: f32 = 0.28466892;
const CM_HLG_C: f32 = 0.55991073;
const CM_BT709_ALPHA: f32 = 1.09929682680944;
const CM_BT709_BETA: f32 = 0.018053968510807;
const CM_FAR: f32 = 1e30;
// Gamut walls within this fraction: over the peak by rounding only (the tone curve lands on it) is not
// out, and what meets a zero wall is zero (see alpha2.gpu.tonemap.WALL_SNAP).
const CM_WALL_SNAP: f32 = 1e-6;

// PQ signal -> cd/m².
fn cm_pq_eotf(signal: vec3<f32>) -> vec3<f32> {
    let e = pow(max(signal, vec3<f32>(0.0)), vec3<f32>(1.0 / CM_PQ_M2));
    let y = max(e - CM_PQ_C1, vec3<f32>(0.0)) / (CM_PQ_C2 - CM_PQ_C3 * e);
    return pow(y, vec3<f32>(1.0 / CM_PQ_M1)) * 10000.0;
}

// cd/m² -> PQ signal.
fn cm_pq_inverse_eotf(luminance: vec3<f32>) -> vec3<f32> {
    let y = pow(max(luminance, vec3<f32>(0.0)) / 10000.0, vec3<f32>(CM_PQ_M1));
    return pow((CM_PQ_C1 + CM_PQ_C2 * y) / (1.0 + CM_PQ_C3 * y), vec3<f32>(CM_PQ_M2));
}

fn cm_pq_eotf1(signal: f32) -> f32 {
    return cm_pq_eotf(vec3<f32>(signal)).x;
}

fn cm_pq_inverse_eotf1(luminance: f32) -> f32 {
    return cm_pq_inverse_eotf(vec3<f32>(luminance)).x;
}

fn cm_hlg_inverse_oetf(signal: vec3<f32>) -> vec3<f32> {
    let e = max(signal, vec3<f32>(0.0));
    let upper = (exp((e - CM_HLG_C) / CM_HLG_A) + CM_HLG_B) / 12.0;
    return select(upper, e * e / 3.0, e <= vec3<f32>(0.5));
}

fn cm_hlg_oetf(scene: vec3<f32>) -> vec3<f32> {
    let e = max(scene, vec3<f32>(0.0));
    let upper = CM_HLG_A * log(max(12.0 * e - CM_HLG_B, vec3<f32>(1e-30))) + CM_HLG_C;
    return select(upper, sqrt(3.0 * e), e <= vec3<f32>(1.0 / 12.0));
}

fn cm_power(v: vec3<f32>, exponent: f32) -> vec3<f32> {
    return pow(max(v, vec3<f32>(0.0)), vec3<f32>(exponent));
}

fn cm_gamma_of(curve: u32) -> f32 {
    switch curve {
        case 4u: { return 2.2; }
        case 5u: { return 2.8; }
        default: { return 2.4; }
    }
}

// Non-linear signal -> relative linear light (TransferCurve ids).
fn cm_decode(signal: vec3<f32>, curve: u32, p: ColourManage) -> vec3<f32> {
    let v = max(signal, vec3<f32>(0.0));
    switch curve {
        case 0u: { return signal; }
        case 2u: {
            let curved = pow((v + (CM_BT709_ALPHA - 1.0)) / CM_BT709_ALPHA, vec3<f32>(1.0 / 0.45));
            return select(curved, v / 4.5, v < vec3<f32>(4.5 * CM_BT709_BETA));
        }
        case 3u: {
            let curved = pow((v + 0.055) / 1.055, vec3<f32>(2.4));
            return select(curved, v / 12.92, v <= vec3<f32>(12.92 * 0.0031308));
        }
        case 6u: { return cm_pq_eotf(v) / CM_REFERENCE_WHITE; }
        case 7u: {
            let scene = cm_hlg_inverse_oetf(v);
            let y = dot(scene, p.source_luma.xyz);
            let gain = select(0.0, pow(max(y, 1e-30), p.target_luma.w - 1.0), y > 0.0);
            return scene * (p.source_luma.w * gain / CM_REFERENCE_WHITE);
        }
        default: { return cm_power(v, cm_gamma_of(curve)); }
    }
}

// Relative linear light -> non-linear signal (TransferCurve ids).
fn cm_encode(linear: vec3<f32>, curve: u32, p: ColourManage) -> vec3<f32> {
    let v = max(linear, vec3<f32>(0.0));
    switch curve {
        case 0u: { return linear; }
        case 2u: {
            let curved = CM_BT709_ALPHA * pow(v, vec3<f32>(0.45)) - (CM_BT709_ALPHA - 1.0);
            return select(curved, 4.5 * v, v < vec3<f32>(CM_BT709_BETA));
        }
        case 3u: {
            let curved = 1.055 * pow(v, vec3<f32>(1.0 / 2.4)) - 0.055;
            return select(curved, 12.92 * v, v <= vec3<f32>(0.0031308));
        }
        case 6u: { return cm_pq_inverse_eotf(v * CM_REFERENCE_WHITE); }
        case 7u: {
            let display = v * (CM_REFERENCE_WHITE / p.source_luma.w);
            let gamma = p.target_luma.w;
            let y = dot(display, p.target_luma.xyz);
            let gain = select(0.0, pow(max(y, 1e-30), (1.0 - gamma) / gamma), y > 0.0);
            return cm_hlg_oetf(display * gain);
        }
        default: { return cm_power(v, 1.0 / cm_gamma_of(curve)); }
    }
}

// The tone curve on PQ-encoded luminance (ToneCurve ids).
fn cm_tone_pq(signal: f32, p: ColourManage) -> f32 {
    let x = clamp(signal, 0.0, p.tone.x);
    switch cm_id(CM_TONE_CURVE, p.ids.z) {
        case 0u: { return min(x, p.tone.y); }
        case 1u: {
            let e1 = x / p.tone.x;
            let ks = p.tone.z;
            let tb = (e1 - ks) / (1.0 - ks);
            let tb2 = tb * tb;
            let tb3 = tb2 * tb;
            let hermite = (2.0 * tb3 - 3.0 * tb2 + 1.0) * ks + (tb3 - 2.0 * tb2 + tb) * (1.0 - ks)
                + (-2.0 * tb3 + 3.0 * tb2) * p.tone.w;
            return select(hermite, e1, e1 < ks) * p.tone.x;
        }
        default: {
            let d = x - p.tone.z;
            let mapped = select(d, ((p.tone_extra.x * d + p.tone_extra.y) * d + 1.0) * d, d > 0.0);
            return mapped + p.tone.z;
        }
    }
}

// The tone curve on relative linear light.
fn cm_tone_relative(value: f32, p: ColourManage) -> f32 {
    let pq = cm_pq_inverse_eotf1(value * CM_REFERENCE_WHITE);
    // Never above the target peak: f32 powers put the curve's end 1e-5 over it, which the gamut
    // mapping would take for a colour out of range.
    return min(cm_pq_eotf1(cm_tone_pq(pq, p)) / CM_REFERENCE_WHITE, p.tone_extra.z);
}

fn cm_tone_map(rgb: vec3<f32>, p: ColourManage) -> vec3<f32> {
    if (cm_id(CM_TONE_ACTIVE, p.flags.z) == 0u) {
        return rgb;
    }
    let mode = cm_id(CM_TONE_MODE, p.ids.w);
    if (mode == 2u) {
        let mapped = vec3<f32>(
            cm_tone_relative(max(rgb.x, 0.0), p),
            cm_tone_relative(max(rgb.y, 0.0), p),
            cm_tone_relative(max(rgb.z, 0.0), p),
        );
        return select(rgb, mapped, rgb > vec3<f32>(0.0));
    }
    var signal = max(max(rgb.x, rgb.y), rgb.z);
    if (mode == 1u) {
        signal = dot(rgb, p.target_luma.xyz);
    }
    if (signal <= 0.0) {
        return rgb;
    }
    return rgb * (cm_tone_relative(signal, p) / signal);
}

// How far along grey + t * chroma the colour stays within 0..peak (CM_FAR: never leaves).
fn cm_boundary_t(grey: vec3<f32>, chroma: vec3<f32>, peak: f32, with_top: bool) -> f32 {
    let low = select(vec3<f32>(CM_FAR), grey / -chroma, chroma < vec3<f32>(0.0));
    var t = min(min(low.x, low.y), low.z);
    if (with_top) {
        let over = grey + chroma > vec3<f32>(peak * (1.0 + CM_WALL_SNAP));
        let high = select(vec3<f32>(CM_FAR), (vec3<f32>(peak) - grey) / chroma, (chroma > vec3<f32>(0.0)) & over);
        t = min(t, min(min(high.x, high.y), high.z));
    }
    return t;
}

fn cm_gamut_map(rgb: vec3<f32>, p: ColourManage) -> vec3<f32> {
    let peak = p.tone_extra.z;
    let mapping = cm_id(CM_GAMUT_MAPPING, p.flags.x);
    if (mapping == 0u) {
        return clamp(rgb, vec3<f32>(0.0), vec3<f32>(peak));
    }
    let grey = vec3<f32>(clamp(dot(rgb, p.target_luma.xyz), 0.0, peak));
    let chroma = rgb - grey;
    let t_target = cm_boundary_t(grey, chroma, peak, true);
    var scale = min(t_target, 1.0);
    if (mapping == 2u) {
        // Chromatic edges only (the zero walls) on both sides: the peak walls are the tone curve's.
        let t_chroma = cm_boundary_t(grey, chroma, 0.0, false);
        let t_source = cm_boundary_t(p.target_to_source * grey, p.target_to_source * chroma, 0.0, false);
        let knee = p.gamut.x;
        let r = 1.0 / t_chroma;
        let r_source = t_source / t_chroma;
        if (t_chroma < CM_FAR && r > knee && r_source > 1.0 && t_source < CM_FAR) {
            let x = clamp((r - knee) / (r_source - knee), 0.0, 1.0);
            let k = (r_source - knee) / (1.0 - knee);
            let compressed = knee + (1.0 - knee) * (1.0 - pow(1.0 - x, k));
            scale = min(compressed / r, scale);
        }
    }
    let mapped = grey + chroma * scale;
    let at_wall = (chroma < vec3<f32>(0.0)) & (mapped < grey * CM_WALL_SNAP) & vec3<bool>(scale < 1.0);
    return clamp(select(mapped, vec3<f32>(0.0), at_wall), vec3<f32>(0.0), vec3<f32>(peak));
}

// The whole chain: non-linear source R'G'B' -> non-linear target R'G'B' (0..1).
fn colour_manage(rgb: vec3<f32>, p: ColourManage) -> vec3<f32> {
    if (p.flags.y != 0u) {
        return rgb;
    }
    var linear = cm_decode(rgb, cm_id(CM_SOURCE_CURVE, p.ids.x), p);
    linear = p.primaries * linear;
    linear = cm_tone_map(linear, p);
    linear = cm_gamut_map(linear, p);
    let signal = cm_encode(linear * p.tone_extra.w, cm_id(CM_TARGET_CURVE, p.ids.y), p);
    return clamp(signal, vec3<f32>(0.0), vec3<f32>(1.0));
}
