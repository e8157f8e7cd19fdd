//! `exp` over a slice, four `f64` or eight `f32` at a time.
//!
//! Hand-written because the RBF kernel is an `exp` per kernel value, and glibc's scalar
//! `exp` (~8 ns a call here) took ~60 % of a batch prediction and ~half of a Gram
//! matrix's time; no well-kept crate offers a vector `exp` on stable Rust with run-time
//! CPU dispatch (`wide` fixes its instruction set at compile time, SLEEF's Rust port needs
//! nightly). The method is the textbook one (Cody–Waite reduction by `ln 2`, then a
//! Taylor polynomial of `e^r` on `|r| ≤ ln 2 / 2`, then `2^n` from the exponent bits):
//! within ~1 ulp of the correctly rounded value, checked against `f64::exp` in the tests.
//!
//! Every element goes through the same instructions wherever it sits in the slice (a tail
//! shorter than a vector is padded), so a kernel value does not depend on its position,
//! its row's length or the thread count. Machines without AVX2 and FMA take `f64::exp` /
//! `f32::exp`: a given machine always takes the same path.

/// `values[i] = exp(values[i])` for every element.
pub fn exp_in_place_f64(values: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if super::has_fma() {
        // SAFETY: AVX2 and FMA are available (checked just above).
        return unsafe { simd::exp_f64(values) };
    }
    values.iter_mut().for_each(|v| *v = v.exp());
}

/// `values[i] = exp(values[i])` for every element.
pub fn exp_in_place_f32(values: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if super::has_fma() {
        // SAFETY: AVX2 and FMA are available (checked just above).
        return unsafe { simd::exp_f32(values) };
    }
    values.iter_mut().for_each(|v| *v = v.exp());
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    /// `1/n!` for `n = 13, 12, ..., 2`: the Taylor polynomial of `e^r` past `1 + r`.
    /// At `|r| ≤ ln 2 / 2` the first term left out, `r^14/14!`, is ~4·10⁻¹⁸ of `e^r`.
    const TAYLOR_F64: [f64; 12] = [
        1.0 / 6_227_020_800.0,
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
    ];
    /// `1/n!` for `n = 7, ..., 2`; the first term left out, `r^8/8!`, is ~5·10⁻⁹ of `e^r`,
    /// a twentieth of an `f32` ulp.
    const TAYLOR_F32: [f32; 6] = [
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
    ];

    /// `ln 2` split in two (Cody–Waite, fdlibm's and SLEEF's values): the high parts end
    /// in zero bits, so `n·LN2_HIGH` is exact for every `n` reached.
    const LN2_HIGH_F64: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000); // 0.693147180369123816490
    const LN2_LOW_F64: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76); // 1.90821492927058770002e-10
    const LN2_HIGH_F32: f32 = f32::from_bits(0x3F31_7200); // 0.693145751953125
    const LN2_LOW_F32: f32 = f32::from_bits(0x35BF_BE8E); // 1.428606765330187045e-6

    /// Past these, `exp` is `+inf` and `0` (below the least subnormal, halved).
    const OVERFLOW_F64: f64 = 709.782_712_893_384;
    const UNDERFLOW_F64: f64 = -745.2;
    const OVERFLOW_F32: f32 = 88.722_84;
    const UNDERFLOW_F32: f32 = -103.98;

    #[target_feature(enable = "avx2,fma")]
    unsafe fn exp4(x: __m256d) -> __m256d {
        // n = round(x / ln 2), from the low bits of x·log2(e) + 1.5·2^52.
        let shifter = _mm256_set1_pd(6_755_399_441_055_744.0);
        let t = _mm256_fmadd_pd(x, _mm256_set1_pd(std::f64::consts::LOG2_E), shifter);
        let n = _mm256_sub_pd(t, shifter);
        let r = _mm256_fnmadd_pd(n, _mm256_set1_pd(LN2_HIGH_F64), x);
        let r = _mm256_fnmadd_pd(n, _mm256_set1_pd(LN2_LOW_F64), r);
        let mut p = _mm256_set1_pd(TAYLOR_F64[0]);
        for &c in &TAYLOR_F64[1..] {
            p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(c));
        }
        // e^r = 1 + (r + r²·p), the 1 added last, where it rounds least.
        let r2 = _mm256_mul_pd(r, r);
        let e_r = _mm256_add_pd(_mm256_set1_pd(1.0), _mm256_fmadd_pd(r2, p, r));
        // 2^n as two factors 2^(n/2)·2^(n - n/2), each a normal number for the n of
        // subnormal results too; the integer n sits in the low bits of t.
        let n_int = _mm256_sub_epi64(_mm256_castpd_si256(t), _mm256_castpd_si256(shifter));
        let half = _mm256_srai_epi32::<1>(n_int);
        // The arithmetic shift of 32-bit lanes halves the low word, which holds n
        // (|n| < 2^31); the high words are 0 or all ones and stay so.
        let rest = _mm256_sub_epi64(n_int, half);
        let bias = _mm256_set1_epi64x(1023);
        let scale_half = _mm256_castsi256_pd(_mm256_slli_epi64::<52>(_mm256_add_epi64(half, bias)));
        let scale_rest = _mm256_castsi256_pd(_mm256_slli_epi64::<52>(_mm256_add_epi64(rest, bias)));
        let value = _mm256_mul_pd(_mm256_mul_pd(e_r, scale_half), scale_rest);
        // NaN compares false both ways and stays NaN.
        let zero = _mm256_cmp_pd::<_CMP_LT_OQ>(x, _mm256_set1_pd(UNDERFLOW_F64));
        let value = _mm256_blendv_pd(value, _mm256_setzero_pd(), zero);
        let infinite = _mm256_cmp_pd::<_CMP_GT_OQ>(x, _mm256_set1_pd(OVERFLOW_F64));
        _mm256_blendv_pd(value, _mm256_set1_pd(f64::INFINITY), infinite)
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn exp8(x: __m256) -> __m256 {
        // n = round(x / ln 2), from the low bits of x·log2(e) + 1.5·2^23.
        let shifter = _mm256_set1_ps(12_582_912.0);
        let t = _mm256_fmadd_ps(x, _mm256_set1_ps(std::f32::consts::LOG2_E), shifter);
        let n = _mm256_sub_ps(t, shifter);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HIGH_F32), x);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LOW_F32), r);
        let mut p = _mm256_set1_ps(TAYLOR_F32[0]);
        for &c in &TAYLOR_F32[1..] {
            p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
        }
        let r2 = _mm256_mul_ps(r, r);
        let e_r = _mm256_add_ps(_mm256_set1_ps(1.0), _mm256_fmadd_ps(r2, p, r));
        let n_int = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(shifter));
        let half = _mm256_srai_epi32::<1>(n_int);
        let rest = _mm256_sub_epi32(n_int, half);
        let bias = _mm256_set1_epi32(127);
        let scale_half = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(half, bias)));
        let scale_rest = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(rest, bias)));
        let value = _mm256_mul_ps(_mm256_mul_ps(e_r, scale_half), scale_rest);
        let zero = _mm256_cmp_ps::<_CMP_LT_OQ>(x, _mm256_set1_ps(UNDERFLOW_F32));
        let value = _mm256_blendv_ps(value, _mm256_setzero_ps(), zero);
        let infinite = _mm256_cmp_ps::<_CMP_GT_OQ>(x, _mm256_set1_ps(OVERFLOW_F32));
        _mm256_blendv_ps(value, _mm256_set1_ps(f32::INFINITY), infinite)
    }

    /// Whole vectors in place; a shorter tail through a padded vector of its own.
    macro_rules! exp_slice {
        ($name:ident, $t:ty, $w:literal, $vector:ident, $load:ident, $store:ident) => {
            #[target_feature(enable = "avx2,fma")]
            pub(super) unsafe fn $name(values: &mut [$t]) {
                let mut chunks = values.chunks_exact_mut($w);
                for chunk in &mut chunks {
                    // SAFETY: the chunk holds exactly one vector's lanes.
                    unsafe { $store(chunk.as_mut_ptr(), $vector($load(chunk.as_ptr()))) };
                }
                let tail = chunks.into_remainder();
                if !tail.is_empty() {
                    let mut padded = [0.0; $w];
                    padded[..tail.len()].copy_from_slice(tail);
                    // SAFETY: `padded` holds exactly one vector's lanes.
                    unsafe { $store(padded.as_mut_ptr(), $vector($load(padded.as_ptr()))) };
                    tail.copy_from_slice(&padded[..tail.len()]);
                }
            }
        };
    }
    exp_slice!(exp_f64, f64, 4, exp4, _mm256_loadu_pd, _mm256_storeu_pd);
    exp_slice!(exp_f32, f32, 8, exp8, _mm256_loadu_ps, _mm256_storeu_ps);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place between two finite `f64` of one sign.
    fn ulps_f64(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    fn ulps_f32(a: f32, b: f32) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    /// Points spread over `[low, high]`, with the integers and half-integers of `x/ln 2`
    /// (the ends of the reduced range) among them.
    fn grid(low: f64, high: f64, n: usize) -> Vec<f64> {
        let mut points: Vec<f64> = (0..=n)
            .map(|i| low + (high - low) * i as f64 / n as f64)
            .collect();
        let ln2 = std::f64::consts::LN_2;
        let first = (low / ln2).ceil() as i64;
        let last = (high / ln2).floor() as i64;
        for k in first..=last {
            points.push(k as f64 * ln2);
            points.push((k as f64 + 0.5) * ln2);
        }
        points
    }

    #[test]
    fn f64_is_within_one_ulp_of_std_over_the_whole_range() {
        let mut values = grid(-745.0, 709.7, 400_000);
        values.extend([-1e-300, -5e-324, 1e-20, -0.3, 0.3]);
        let expected: Vec<f64> = values.iter().map(|v| v.exp()).collect();
        exp_in_place_f64(&mut values);
        let mut worst = 0;
        for (&got, &want) in values.iter().zip(&expected) {
            if want >= f64::MIN_POSITIVE {
                worst = worst.max(ulps_f64(got, want));
            } else {
                // Subnormal results: within one ulp of the subnormals' fixed spacing.
                assert!((got - want).abs() <= 5e-324 * 1.0, "{got} against {want}");
            }
        }
        assert!(worst <= 1, "worst error {worst} ulp");
    }

    #[test]
    fn f32_is_within_one_ulp_of_the_rounded_f64_value() {
        let mut values: Vec<f32> = grid(-103.0, 88.7, 200_000)
            .into_iter()
            .map(|v| v as f32)
            .collect();
        let expected: Vec<f32> = values.iter().map(|&v| (v as f64).exp() as f32).collect();
        exp_in_place_f32(&mut values);
        let mut worst = 0;
        for (&got, &want) in values.iter().zip(&expected) {
            if want >= f32::MIN_POSITIVE {
                worst = worst.max(ulps_f32(got, want));
            } else {
                assert!((got - want).abs() <= 1.5e-45, "{got} against {want}");
            }
        }
        assert!(worst <= 1, "worst error {worst} ulp");
    }

    #[test]
    fn special_values_are_those_of_std() {
        let mut values = [
            0.0,
            -0.0,
            f64::NEG_INFINITY,
            f64::INFINITY,
            f64::NAN,
            -1e308,
            1e308,
            -746.0,
            710.0,
        ];
        exp_in_place_f64(&mut values);
        assert_eq!(values[..2], [1.0, 1.0]);
        assert_eq!(values[2], 0.0);
        assert_eq!(values[3], f64::INFINITY);
        assert!(values[4].is_nan());
        assert_eq!(values[5], 0.0);
        assert_eq!(values[6], f64::INFINITY);
        assert_eq!(values[7], 0.0);
        assert_eq!(values[8], f64::INFINITY);
        let mut values = [
            0.0f32,
            f32::NEG_INFINITY,
            f32::INFINITY,
            f32::NAN,
            -200.0,
            100.0,
        ];
        exp_in_place_f32(&mut values);
        assert_eq!(values[0], 1.0);
        assert_eq!(values[1], 0.0);
        assert_eq!(values[2], f32::INFINITY);
        assert!(values[3].is_nan());
        assert_eq!(values[4], 0.0);
        assert_eq!(values[5], f32::INFINITY);
    }

    #[test]
    fn a_value_does_not_depend_on_its_place_in_the_slice() {
        let inputs: Vec<f64> = (0..23).map(|i| -0.37 * i as f64).collect();
        let mut whole = inputs.clone();
        exp_in_place_f64(&mut whole);
        for (i, &input) in inputs.iter().enumerate() {
            let mut alone = [input];
            exp_in_place_f64(&mut alone);
            assert_eq!(alone[0].to_bits(), whole[i].to_bits());
        }
    }
}
