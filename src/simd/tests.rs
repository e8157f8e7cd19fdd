//! The SIMD bodies against their portable twins, bit for bit.

use super::dots;
use super::dots::Dots;
use super::portable::*;
#[cfg(target_arch = "x86_64")]
use super::{avx512, has_avx512};
use super::{simd_level, SimdLevel};
use crate::real::Real;

/// The AVX-512 wide symmetric tile of `F`, 4 rows × 6 right-hand sides.
type WideTile<F> = unsafe fn(
    [&[F]; 4],
    [&[F]; 6],
    [[F; 6]; 4],
    std::ops::Range<usize>,
    &mut [F],
    usize,
    [&mut [F]; 6],
);

fn check_wide_symmetric_tiles<F: Real, const W: usize>(simd_tile: WideTile<F>) {
    let n = 3 * W + 5;
    let value = |seed: usize| F::from_f64(((seed * 7919) % 23) as f64 / 11.0 - 1.0);
    let rows: Vec<Vec<F>> = (0..4)
        .map(|o| (0..n).map(|l| value(l + 31 * o)).collect())
        .collect();
    let xs: Vec<Vec<F>> = (0..6)
        .map(|j| (0..n).map(|l| value(3 * l + j)).collect())
        .collect();
    let coefficients: [[F; 6]; 4] =
        std::array::from_fn(|o| std::array::from_fn(|j| value(o * 6 + j + 1)));
    // Whole registers, a partial last one, a range shorter than one.
    for range in [2..2 + 2 * W, 1..n, 5..5 + W / 2 + 1, 0..n] {
        let stride = 9;
        let run = |simd: bool| {
            let mut sums = vec![F::from_f64(0.5); 3 * stride + 6];
            let mut buffers: Vec<Vec<F>> = (0..6).map(|j| vec![value(j); range.len()]).collect();
            let rows: [&[F]; 4] = std::array::from_fn(|o| rows[o].as_slice());
            let rhs: [&[F]; 6] = std::array::from_fn(|j| xs[j].as_slice());
            let mut outputs = buffers.iter_mut();
            let targets: [&mut [F]; 6] =
                std::array::from_fn(|_| outputs.next().expect("6 buffers").as_mut_slice());
            let tile: WideTile<F> = if simd {
                simd_tile
            } else {
                portable_symmetric_wide_tile::<F, 4, 6, W>
            };
            // SAFETY: AVX-512 is available for the SIMD tile (the test's caller checked).
            let args = (rows, rhs, coefficients, range.clone());
            unsafe { tile(args.0, args.1, args.2, args.3, &mut sums, stride, targets) };
            (sums, buffers)
        };
        let (simd, portable) = (run(true), run(false));
        // Bit patterns (through `as_f64`, exact for both types): a −0 and a +0 differ,
        // where `==` would call them equal.
        let bits = |(sums, buffers): &(Vec<F>, Vec<Vec<F>>)| -> Vec<u64> {
            let values = sums.iter().chain(buffers.iter().flatten());
            values.map(|v| v.as_f64().to_bits()).collect()
        };
        assert_eq!(bits(&simd), bits(&portable), "range {range:?}");
        // And the sums are the products they stand for.
        let (sums, buffers) = simd;
        for o in 0..4 {
            for j in 0..6 {
                let expected: f64 = 0.5
                    + range
                        .clone()
                        .map(|l| rows[o][l].as_f64() * xs[j][l].as_f64())
                        .sum::<f64>();
                assert!(
                    (sums[o * stride + j].as_f64() - expected).abs()
                        < 1e-4 * (1.0 + expected.abs())
                );
            }
        }
        for (j, buffer) in buffers.iter().enumerate() {
            for (at, l) in range.clone().enumerate() {
                let expected: f64 = value(j).as_f64()
                    + (0..4)
                        .map(|o| rows[o][l].as_f64() * coefficients[o][j].as_f64())
                        .sum::<f64>();
                assert!((buffer[at].as_f64() - expected).abs() < 1e-4 * (1.0 + expected.abs()));
            }
        }
    }
}

#[test]
fn a_masked_last_step_turns_negative_zero_sums_positive_in_both_twins() {
    // Products that underflow to −0 leave −0 lanes; the SIMD tile's masked lanes then
    // add 0·0, so its twin must too.
    let (rows, xs) = (vec![-1e-200f64; 9], vec![1e-200f64; 9]);
    type Tile = unsafe fn(
        [&[f64]; 1],
        [&[f64]; 1],
        [[f64; 1]; 1],
        std::ops::Range<usize>,
        &mut [f64],
        usize,
        [&mut [f64]; 1],
    );
    let run = |tile: Tile| {
        let mut sums = [-0.0f64; 1];
        let mut buffer = vec![0.0f64; 9];
        let (rows, rhs) = ([rows.as_slice()], [xs.as_slice()]);
        // SAFETY: the SIMD tile is only passed where AVX-512 is available.
        unsafe { tile(rows, rhs, [[1.0]], 0..9, &mut sums, 1, [&mut buffer]) };
        let buffer: Vec<u64> = buffer.iter().map(|v| v.to_bits()).collect();
        (sums[0].to_bits(), buffer)
    };
    let portable = run(portable_symmetric_wide_tile::<f64, 1, 1, 8>);
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        assert_eq!(run(avx512::symmetric_wide_tile_f64::<1, 1>), portable);
    }
    // −0 lanes would sum to −0, and −0 + −0 stays −0: the masked lanes' +0s make it +0.
    assert_eq!(portable.0, 0.0f64.to_bits());
}

#[test]
fn symmetric_wide_tiles_match_the_portable_tiles_bit_for_bit() {
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        check_wide_symmetric_tiles::<f64, 8>(avx512::symmetric_wide_tile_f64::<4, 6>);
        check_wide_symmetric_tiles::<f32, 16>(avx512::symmetric_wide_tile_f32::<4, 6>);
        return;
    }
    eprintln!("no AVX-512 here: the wide symmetric tiles' SIMD code is not tested");
}

#[test]
fn packed_tiles_match_the_portable_tiles_bit_for_bit() {
    fn check<F, const ROWS: usize, const V: usize, const W: usize>()
    where
        F: Real + Dots<Lanes = [F; W]>,
    {
        let n = 53;
        let rows: Vec<Vec<F>> = (0..ROWS)
            .map(|o| {
                (0..n)
                    .map(|l| F::from_f64(((o * 7 + l * 5) % 13) as f64 / 3.0))
                    .collect()
            })
            .collect();
        let packed: Vec<F> = (0..n * V * W)
            .map(|t| F::from_f64((t % 17) as f64 / 5.0 - 1.5))
            .collect();
        let rows: [&[F]; ROWS] = std::array::from_fn(|o| rows[o].as_slice());
        let start: Vec<[F; W]> = (0..ROWS * V)
            .map(|a| std::array::from_fn(|lane| F::from_f64((a * W + lane) as f64 * 0.25)))
            .collect();
        // Padded and tight columns (a tight block reads into the next column).
        for stride in [V * W, V * W - 1] {
            let (mut simd, mut portable) = (start.clone(), start.clone());
            F::packed_tile::<ROWS, V>(rows, &packed, stride, 3..n, &mut simd);
            portable_packed_tile::<F, ROWS, V, W>(rows, &packed, stride, 3..n, &mut portable);
            assert_eq!(simd, portable);
        }
    }
    check::<f64, 3, 3, 4>();
    check::<f64, 4, 3, 4>();
    check::<f64, 6, 2, 4>();
    check::<f64, 6, 1, 4>();
    check::<f64, 1, 3, 4>();
    // The tall tiles of AVX-512 (the AVX2 code elsewhere).
    check::<f64, 8, 3, 4>();
    check::<f64, 12, 2, 4>();
    check::<f64, 12, 1, 4>();
    check::<f32, 8, 3, 8>();
    check::<f32, 12, 1, 8>();
    check::<f32, 3, 3, 8>();
    check::<f32, 4, 3, 8>();
    check::<f32, 6, 2, 8>();
    check::<f32, 1, 1, 8>();
}

#[test]
fn row_statistics_are_the_dot_products_with_the_weighted_row_bit_for_bit() {
    fn check<F: Real>() {
        let value = |a: usize, b: usize| F::from_f64(((a * 5 + b * 3) % 19) as f64 / 3.0 - 2.0);
        for n in [0usize, 1, 5, 8, 13, 16, 37, 130] {
            let row: Vec<F> = (0..n).map(|l| value(1, l)).collect();
            let positive: Vec<F> = (0..n)
                .map(|l| F::from_f64((l % 3 == 0) as u8 as f64))
                .collect();
            let negative: Vec<F> = positive.iter().map(|&p| F::one() - p).collect();
            let weight: Vec<F> = (0..n).map(|l| value(4, l) * value(4, l)).collect();
            let weighted: Vec<F> = row.iter().zip(&weight).map(|(&r, &w)| w * r).collect();
            let expected = dots(&row, [&positive[..], &negative, &weighted]);
            assert!(F::row_statistics(&row, &positive, &negative, &weight) == expected);
            // The weighted norm as a dot product of its own: the same sum.
            assert!(dots(&weighted, [&row[..]])[0] == expected[2]);
            assert!(
                portable_row_statistics(&row, &positive, &negative, &weight)
                    == portable_dots(&row, [&positive[..], &negative, &weighted])
            );
            // Four rows side by side: each row's sums, bit for bit.
            let rows: Vec<Vec<F>> = (0..4)
                .map(|o| (0..n).map(|l| value(o + 2, l)).collect())
                .collect();
            let four: [&[F]; 4] = std::array::from_fn(|o| rows[o].as_slice());
            let together = F::row_statistics_4(four, &positive, &negative, &weight);
            for (row, stats) in rows.iter().zip(together) {
                let alone = F::row_statistics(row, &positive, &negative, &weight);
                let bits = |values: [F; 3]| values.map(|v| v.as_f64().to_bits());
                assert_eq!(bits(stats), bits(alone), "n={n}");
            }
        }
    }
    check::<f64>();
    check::<f32>();
}

#[test]
fn combine_tiles_match_the_portable_tiles_bit_for_bit() {
    fn check<F: Real, const O: usize, const V: usize>() {
        let n = V * F::WIDTH + 3;
        let value = |a: usize, b: usize| F::from_f64(((a * 5 + b * 3) % 19) as f64 / 3.0 - 2.0);
        let vectors: Vec<Vec<F>> = (0..9)
            .map(|r| (0..n).map(|l| value(r, l)).collect())
            .collect();
        let terms: Vec<&[F]> = vectors.iter().map(Vec::as_slice).collect();
        let coefficients: Vec<Vec<F>> = (0..O)
            .map(|o| (0..9).map(|r| value(o + 4, r)).collect())
            .collect();
        let c: Vec<&[F]> = coefficients.iter().map(Vec::as_slice).collect();
        let init: Vec<Vec<F>> = (0..O)
            .map(|o| (0..n).map(|l| value(o, l + 7)).collect())
            .collect();
        let (mut simd, mut portable) = (init.clone(), init);
        let mut pieces: Vec<&mut [F]> = simd.iter_mut().map(Vec::as_mut_slice).collect();
        F::combine_tile::<O, V>(&mut pieces, &terms, &c, 2);
        let mut pieces: Vec<&mut [F]> = portable.iter_mut().map(Vec::as_mut_slice).collect();
        if F::WIDTH == 4 {
            portable_combine_tile::<F, O, V, 4>(&mut pieces, &terms, &c, 2);
        } else {
            portable_combine_tile::<F, O, V, 8>(&mut pieces, &terms, &c, 2);
        }
        assert!(simd == portable, "{O} outputs × {V} vectors");
    }
    check::<f64, 5, 2>();
    check::<f64, 3, 1>();
    check::<f32, 5, 2>();
    check::<f32, 2, 1>();
}

#[test]
fn names_round_trip_and_caps_only_lower_the_level() {
    for level in SimdLevel::ALL {
        assert_eq!(SimdLevel::from_name(level.name()), Some(level));
    }
    assert_eq!(SimdLevel::cap_from(None), None);
    assert_eq!(SimdLevel::cap_from(Some("")), None);
    assert_eq!(SimdLevel::cap_from(Some("AVX2")), None);
    assert_eq!(SimdLevel::cap_from(Some("none")), Some(SimdLevel::Portable));
    assert!(SimdLevel::Portable < SimdLevel::Avx2 && SimdLevel::Avx2 < SimdLevel::Avx512);
    assert!(simd_level() <= SimdLevel::detected());
}

/// The YMM state's bit of XINUSE (`xgetbv(1)`) after `dirty` and then `clean`, or `None` where
/// the CPU does not report XINUSE or reports that state in use after a plain `vzeroupper`
/// (XINUSE may over-report; such a CPU cannot show what `clean` did).
#[cfg(target_arch = "x86_64")]
fn ymm_state_in_use_after(clean: unsafe fn()) -> Option<bool> {
    use std::arch::x86_64::{__cpuid_count, _xgetbv};
    #[target_feature(enable = "avx")]
    unsafe fn dirty() {
        // SAFETY: AVX is available (the caller checked); the register is declared clobbered.
        unsafe { std::arch::asm!("vpcmpeqd ymm0, ymm0, ymm0", out("ymm0") _) }
    }
    #[target_feature(enable = "avx,xsave")]
    unsafe fn in_use_after(clean: unsafe fn()) -> bool {
        // SAFETY: AVX and XGETBV with ECX = 1 are available (the caller checked).
        unsafe {
            dirty();
            clean();
            _xgetbv(1) & 0b100 != 0
        }
    }
    #[target_feature(enable = "avx")]
    unsafe fn plain_vzeroupper() {
        // SAFETY: AVX is available (the caller checked).
        unsafe { std::arch::asm!("vzeroupper", out("ymm0") _) }
    }
    // CPUID leaf 0xD exists on every CPU with XSAVE, checked first.
    let xinuse = is_x86_feature_detected!("avx")
        && is_x86_feature_detected!("xsave")
        && __cpuid_count(0xD, 1).eax & 0b100 != 0;
    // SAFETY: AVX, XSAVE and XGETBV with ECX = 1 are available (just above).
    (xinuse && !unsafe { in_use_after(plain_vzeroupper) }).then(|| unsafe { in_use_after(clean) })
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_portable_kernels_begin_with_the_vector_registers_upper_halves_clear() {
    fn enter() {
        super::enter_portable();
    }
    match ymm_state_in_use_after(enter) {
        Some(in_use) => assert!(!in_use, "the YMM uppers are still in use"),
        None => eprintln!("this CPU does not report the YMM state's use precisely: not checked"),
    }
}
