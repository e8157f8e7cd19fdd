//! The wide symmetric tile on AVX-512 (32 registers of 8 `f64` or 16 `f32`): 4 rows × up to
//! 6 right-hand sides of dot-product lanes stay in 24 registers while the rows stream.

use super::portable::reduce_lanes;
use crate::tuning::WIDE_PREFETCH;
use std::arch::x86_64::*;

macro_rules! symmetric_wide_tile {
    ($name:ident, $t:ty, $w:literal, $mask:ty, $maskz_load:ident, $store:ident, $mask_store:ident, $fmadd:ident, $set1:ident, $zero:ident) => {
        /// [`super::Dots::symmetric_wide_tile`]: per `$w` columns, each row's vector
        /// loaded once feeds `N` FMAs of its dot products and `N` of the transposed
        /// update, whose buffer is loaded and stored once per `ROWS` of them. The last
        /// columns go by masked loads and stores, so no column is left to scalar code.
        #[allow(clippy::too_many_arguments)]
        #[target_feature(enable = "avx512f")]
        pub(crate) unsafe fn $name<const ROWS: usize, const N: usize>(
            rows: [&[$t]; ROWS],
            rhs: [&[$t]; N],
            coefficients: [[$t; N]; ROWS],
            range: std::ops::Range<usize>,
            sums: &mut [$t],
            stride: usize,
            buffers: [&mut [$t]; N],
        ) {
            assert!(rows.iter().all(|row| row.len() >= range.end));
            assert!(rhs.iter().all(|x| x.len() >= range.end));
            assert!(buffers.iter().all(|b| b.len() >= range.len()));
            assert!(sums.len() >= (ROWS - 1) * stride + N);
            let mut registers = [[$zero(); N]; ROWS];
            let mut l = range.start;
            while l < range.end {
                // Every lane but past the range's end (masked loads and stores cost
                // what plain ones do).
                let mask = if l + $w <= range.end {
                    !0
                } else {
                    ((1u32 << (range.end - l)) - 1) as $mask
                };
                // The coefficients are broadcast from memory at each use: hoisted out
                // of the loop, their registers pushed the accumulators onto the stack.
                let coefficients = std::hint::black_box(&coefficients);
                // SAFETY: the lanes of `mask` lie within range, so within every row
                // and rhs, and within every buffer (from range.start).
                unsafe {
                    for row in &rows {
                        let ahead = row.as_ptr().wrapping_add(l + WIDE_PREFETCH);
                        _mm_prefetch::<_MM_HINT_T0>(ahead as *const i8);
                    }
                    let k: [_; ROWS] =
                        std::array::from_fn(|o| $maskz_load(mask, rows[o].as_ptr().add(l)));
                    for j in 0..N {
                        let x = $maskz_load(mask, rhs[j].as_ptr().add(l));
                        let target = buffers[j].as_mut_ptr().add(l - range.start);
                        let mut value = $maskz_load(mask, target);
                        for o in 0..ROWS {
                            registers[o][j] = $fmadd(k[o], x, registers[o][j]);
                            value = $fmadd(k[o], $set1(coefficients[o][j]), value);
                        }
                        $mask_store(target, mask, value);
                    }
                }
                l += $w;
            }
            for (o, by_rhs) in registers.iter().enumerate() {
                for (j, &register) in by_rhs.iter().enumerate() {
                    let mut lanes = [0.0 as $t; $w];
                    // SAFETY: one SIMD vector into its lanes.
                    unsafe { $store(lanes.as_mut_ptr(), register) };
                    sums[o * stride + j] += reduce_lanes(lanes);
                }
            }
        }
    };
}
symmetric_wide_tile!(
    symmetric_wide_tile_f64,
    f64,
    8,
    __mmask8,
    _mm512_maskz_loadu_pd,
    _mm512_storeu_pd,
    _mm512_mask_storeu_pd,
    _mm512_fmadd_pd,
    _mm512_set1_pd,
    _mm512_setzero_pd
);
symmetric_wide_tile!(
    symmetric_wide_tile_f32,
    f32,
    16,
    __mmask16,
    _mm512_maskz_loadu_ps,
    _mm512_storeu_ps,
    _mm512_mask_storeu_ps,
    _mm512_fmadd_ps,
    _mm512_set1_ps,
    _mm512_setzero_ps
);
