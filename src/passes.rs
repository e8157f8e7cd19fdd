//! One read of the kernel for many right-hand sides: `out_j = K x_j`.
//!
//! Hand-written rather than a BLAS/faer GEMM for two reasons: every output element is a
//! dot product summed in one fixed order whatever the number of threads (rows are split
//! between threads, never the reduction), so the selection does not depend on
//! `n_threads`; and all right-hand sides of a pick or a stage share one streaming read
//! of `K`, which is the cost floor of the greedy loop (DESIGN §4). A BLAS `dsymv`, which
//! also reads one triangle, would neither fix the order of the sums nor split by class.
//! Passes with up to 4 right-hand sides read only the upper triangle of the symmetric
//! `K` (`symmetric_products`), and so do those with 5 and 6 on a CPU with AVX-512 (where
//! 2 to 6 take the wide tiles, lanes along the columns); wider
//! ones, bound by arithmetic, read whole rows, each row once for up to 12 (`f64`) or 24
//! (`f32`) right-hand sides (`products_packed`).

use crate::cpu::{simd_level, SimdLevel};
use crate::real::Real;
use rayon::prelude::*;

/// Lanes of independent partial sums: enough for the compiler to vectorise the loop.
const LANES: usize = 8;

/// Dot products of `row` with up to four vectors at once, in a fixed summation order
/// (eight partial sums, reduced pairwise, then the tail).
///
/// On x86-64 with AVX2 and FMA (checked at run time) explicit SIMD code does the same
/// sums with fused multiply-adds; a given machine always takes the same path, so results
/// never depend on the thread count.
#[inline]
pub fn dots<F: Real, const R: usize>(row: &[F], rhs: [&[F]; R]) -> [F; R] {
    debug_assert!(rhs.iter().all(|x| x.len() == row.len()));
    F::dots(row, rhs)
}

/// Per-type dot kernels: SIMD where the CPU has it, the portable loop otherwise.
pub trait Dots: Sized {
    fn dots<const R: usize>(row: &[Self], rhs: [&[Self]; R]) -> [Self; R];
    /// `dots(row, [positive, negative, weighted])` with `weighted[l] = weight[l]·row[l]`
    /// formed in registers (the same products, so the same sums bit for bit): the
    /// statistics of a kernel row from one read of it.
    fn row_statistics(
        row: &[Self],
        positive: &[Self],
        negative: &[Self],
        weight: &[Self],
    ) -> [Self; 3];
    /// [`Dots::row_statistics`] of four rows at once, each row's sums bit for bit those of
    /// [`Dots::row_statistics`]: four rows streaming side by side keep more reads of `K` in
    /// flight than one (the set-up pass of a fit, one read of all of `K`).
    fn row_statistics_4(
        rows: [&[Self]; 4],
        positive: &[Self],
        negative: &[Self],
        weight: &[Self],
    ) -> [[Self; 3]; 4];
    /// Per-output partial sums of a pass: one SIMD register's worth of lanes.
    type Lanes: Copy + Send + Sync;
    /// Elements per [`Dots::Lanes`]; a pass's tiles cover row lengths in multiples of it.
    const WIDTH: usize;
    fn zero_lanes() -> Self::Lanes;
    /// The lanes as a slice, in order.
    fn lane_slice(lanes: &Self::Lanes) -> &[Self];
    /// The lanes' sum, in a fixed (pairwise) order.
    fn reduce(lanes: Self::Lanes) -> Self;
    /// A register tile of a pass: `acc[o·stride + j] += rows[o][range]·rhs[j][range]` lane
    /// by lane, for a range whose length is a multiple of [`Dots::WIDTH`]. Each output's
    /// lanes see the elements in the same order whatever the tile shape or the slicing of
    /// the range, so shapes can follow what is left to do without changing a bit of the
    /// result.
    fn tile<const ROWS: usize, const R: usize>(
        rows: [&[Self]; ROWS],
        rhs: [&[Self]; R],
        range: std::ops::Range<usize>,
        acc: &mut [Self::Lanes],
        stride: usize,
    );
    /// `out[l] −= Σ_r coefficients[r] · vectors[r][l]`, one fused multiply-add per term in
    /// the order of `r`: a combination of deflation terms streams `R` of them at once.
    fn subtract_terms<const R: usize>(
        out: &mut [Self],
        vectors: [&[Self]; R],
        coefficients: [Self; R],
    );
    /// A tile of a wide pass: `acc[o·V + v][lane] += Σ_{l ∈ range} rows[o][l] ·
    /// packed[l·stride + v·WIDTH + lane]`, where `packed` holds right-hand sides
    /// interleaved column by column, `stride` values per column (`pack_columns`). Each
    /// kernel element is broadcast once to all of them, so a row streams from memory once
    /// whatever their number; each output is one running sum over `l` in ascending order.
    fn packed_tile<const ROWS: usize, const V: usize>(
        rows: [&[Self]; ROWS],
        packed: &[Self],
        stride: usize,
        range: std::ops::Range<usize>,
        acc: &mut [Self::Lanes],
    );
    /// A tile of a combination of many outputs ([`combine_chunk`]): `outs[o][at + i] −=
    /// Σ_r coefficients[o][r] · vectors[r][at + i]` for `i < V·WIDTH` and `o < O`, one fused
    /// multiply-add per term in the order of `r` (the sums of [`Dots::subtract_terms`], bit
    /// for bit). The outputs' lanes stay in registers while each term's piece, loaded once,
    /// feeds all `O` of them.
    fn combine_tile<const O: usize, const V: usize>(
        outs: &mut [&mut [Self]],
        vectors: &[&[Self]],
        coefficients: &[&[Self]],
        at: usize,
    );
    /// The tile of a symmetric pass: [`Dots::tile`] over `range` and, from the same load
    /// of each kernel element, `buffers[j][l − range.start] += Σ_o coefficients[o][j] ·
    /// rows[o][l]` (one fused multiply-add per row, in the order of `o`).
    fn symmetric_tile<const ROWS: usize, const R: usize>(
        rows: [&[Self]; ROWS],
        rhs: [&[Self]; R],
        coefficients: [[Self; R]; ROWS],
        range: std::ops::Range<usize>,
        acc: &mut [Self::Lanes],
        stride: usize,
        buffers: [&mut [Self]; R],
    );
    /// Lanes of the wide symmetric tile: one AVX-512 register of `Self`.
    const WIDE_WIDTH: usize;
    /// The tile of a wide symmetric pass (2 to 6 right-hand sides), lanes along
    /// the columns: `sums[o·stride + j] += rows[o][range]·rhs[j][range]` (a dot product
    /// over [`Dots::WIDE_WIDTH`] lanes, reduced pairwise) and, from the same load of each
    /// kernel element, `buffers[j][l − range.start] += Σ_o coefficients[o][j] · rows[o][l]`
    /// (one fused multiply-add per row, in the order of `o`). Every lane is used whatever
    /// the number of right-hand sides, where lanes along them leave some idle. The range's
    /// last columns, short of a whole register, take the lanes they fill.
    #[allow(clippy::too_many_arguments)]
    fn symmetric_wide_tile<const ROWS: usize, const N: usize>(
        rows: [&[Self]; ROWS],
        rhs: [&[Self]; N],
        coefficients: [[Self; N]; ROWS],
        range: std::ops::Range<usize>,
        sums: &mut [Self],
        stride: usize,
        buffers: [&mut [Self]; N],
    );
}

/// The `f64` and `f32` impls differ only in the type, its SIMD width and the kernels' names.
macro_rules! impl_dots {
    ($t:ty, $width:literal, $wide_width:literal, $dots:ident, $row_statistics:ident, $row_statistics_4:ident, $tile:ident, $packed_tile:ident, $packed_tile_512:ident, $packed_tile_4x3:ident, $subtract_terms:ident, $combine_tile:ident, $symmetric_tile:ident, $symmetric_wide_tile:ident) => {
        impl Dots for $t {
            #[inline]
            fn dots<const R: usize>(row: &[$t], rhs: [&[$t]; R]) -> [$t; R] {
                #[cfg(target_arch = "x86_64")]
                if has_fma() {
                    // SAFETY: AVX2 and FMA are available (checked just above).
                    return unsafe { simd::$dots(row, rhs) };
                }
                portable_dots(row, rhs)
            }

            #[inline]
            fn row_statistics(
                row: &[$t],
                positive: &[$t],
                negative: &[$t],
                weight: &[$t],
            ) -> [$t; 3] {
                #[cfg(target_arch = "x86_64")]
                if has_fma() {
                    // SAFETY: AVX2 and FMA are available (checked just above).
                    return unsafe { simd::$row_statistics([row], positive, negative, weight)[0] };
                }
                portable_row_statistics(row, positive, negative, weight)
            }

            #[inline]
            fn row_statistics_4(
                rows: [&[$t]; 4],
                positive: &[$t],
                negative: &[$t],
                weight: &[$t],
            ) -> [[$t; 3]; 4] {
                #[cfg(target_arch = "x86_64")]
                if has_avx512() {
                    // SAFETY: AVX-512F and VL, AVX2 and FMA are available (checked just above).
                    return unsafe { simd::$row_statistics_4(rows, positive, negative, weight) };
                }
                rows.map(|row| Self::row_statistics(row, positive, negative, weight))
            }

            type Lanes = [$t; $width];
            const WIDTH: usize = $width;

            fn zero_lanes() -> [$t; $width] {
                [0.0; $width]
            }

            fn lane_slice(lanes: &[$t; $width]) -> &[$t] {
                lanes
            }

            fn reduce(lanes: [$t; $width]) -> $t {
                reduce_lanes(lanes)
            }

            #[inline]
            fn tile<const ROWS: usize, const R: usize>(
                rows: [&[$t]; ROWS],
                rhs: [&[$t]; R],
                range: std::ops::Range<usize>,
                acc: &mut [[$t; $width]],
                stride: usize,
            ) {
                #[cfg(target_arch = "x86_64")]
                if has_fma() {
                    // SAFETY: AVX2 and FMA are available (checked just above).
                    return unsafe { simd::$tile(rows, rhs, range, acc, stride) };
                }
                portable_tile(rows, rhs, range, acc, stride)
            }

            #[inline]
            fn packed_tile<const ROWS: usize, const V: usize>(
                rows: [&[$t]; ROWS],
                packed: &[$t],
                stride: usize,
                range: std::ops::Range<usize>,
                acc: &mut [[$t; $width]],
            ) {
                #[cfg(target_arch = "x86_64")]
                if ROWS > 6 && has_avx512() {
                    // SAFETY: AVX-512F and VL, AVX2 and FMA are available (checked just above).
                    return unsafe {
                        simd::$packed_tile_512::<ROWS, V>(rows, packed, stride, range, acc)
                    };
                }
                #[cfg(target_arch = "x86_64")]
                if has_fma() {
                    if ROWS == 4 && V == 3 {
                        let rows = std::array::from_fn(|o| rows[o]);
                        // SAFETY: AVX2 and FMA are available (checked just above).
                        return unsafe { simd::$packed_tile_4x3(rows, packed, stride, range, acc) };
                    }
                    // SAFETY: AVX2 and FMA are available (checked just above).
                    return unsafe {
                        simd::$packed_tile::<ROWS, V>(rows, packed, stride, range, acc)
                    };
                }
                portable_packed_tile::<$t, ROWS, V, $width>(rows, packed, stride, range, acc)
            }

            #[inline]
            fn subtract_terms<const R: usize>(
                out: &mut [$t],
                vectors: [&[$t]; R],
                coefficients: [$t; R],
            ) {
                #[cfg(target_arch = "x86_64")]
                if has_fma() {
                    // SAFETY: AVX2 and FMA are available (checked just above).
                    return unsafe { simd::$subtract_terms(out, vectors, coefficients) };
                }
                portable_subtract_terms(out, vectors, coefficients)
            }

            #[inline]
            fn combine_tile<const O: usize, const V: usize>(
                outs: &mut [&mut [$t]],
                vectors: &[&[$t]],
                coefficients: &[&[$t]],
                at: usize,
            ) {
                #[cfg(target_arch = "x86_64")]
                if has_fma() {
                    // SAFETY: AVX2 and FMA are available (checked just above).
                    return unsafe { simd::$combine_tile::<O, V>(outs, vectors, coefficients, at) };
                }
                portable_combine_tile::<$t, O, V, $width>(outs, vectors, coefficients, at)
            }

            #[inline]
            fn symmetric_tile<const ROWS: usize, const R: usize>(
                rows: [&[$t]; ROWS],
                rhs: [&[$t]; R],
                coefficients: [[$t; R]; ROWS],
                range: std::ops::Range<usize>,
                acc: &mut [[$t; $width]],
                stride: usize,
                buffers: [&mut [$t]; R],
            ) {
                #[cfg(target_arch = "x86_64")]
                if has_fma() {
                    // SAFETY: AVX2 and FMA are available (checked just above).
                    return unsafe {
                        simd::$symmetric_tile(rows, rhs, coefficients, range, acc, stride, buffers)
                    };
                }
                portable_symmetric_tile(rows, rhs, coefficients, range, acc, stride, buffers)
            }

            const WIDE_WIDTH: usize = $wide_width;

            #[inline]
            fn symmetric_wide_tile<const ROWS: usize, const N: usize>(
                rows: [&[$t]; ROWS],
                rhs: [&[$t]; N],
                coefficients: [[$t; N]; ROWS],
                range: std::ops::Range<usize>,
                sums: &mut [$t],
                stride: usize,
                buffers: [&mut [$t]; N],
            ) {
                #[cfg(target_arch = "x86_64")]
                if has_avx512() {
                    // SAFETY: AVX-512F is available (checked just above).
                    return unsafe {
                        simd512::$symmetric_wide_tile(
                            rows,
                            rhs,
                            coefficients,
                            range,
                            sums,
                            stride,
                            buffers,
                        )
                    };
                }
                portable_symmetric_wide_tile::<$t, ROWS, N, $wide_width>(
                    rows,
                    rhs,
                    coefficients,
                    range,
                    sums,
                    stride,
                    buffers,
                )
            }
        }
    };
}

impl_dots!(
    f64,
    4,
    8,
    dots_f64,
    row_statistics_f64,
    row_statistics_512_f64,
    tile_f64,
    packed_tile_f64,
    packed_tile_512_f64,
    packed_tile_4x3_f64,
    subtract_terms_f64,
    combine_tile_f64,
    symmetric_tile_f64,
    symmetric_wide_tile_f64
);
impl_dots!(
    f32,
    8,
    16,
    dots_f32,
    row_statistics_f32,
    row_statistics_512_f32,
    tile_f32,
    packed_tile_f32,
    packed_tile_512_f32,
    packed_tile_4x3_f32,
    subtract_terms_f32,
    combine_tile_f32,
    symmetric_tile_f32,
    symmetric_wide_tile_f32
);

/// Whether the tiles run on AVX2 and FMA ([`crate::cpu::simd_level`]: the CPU's, capped by
/// `GKFDA_SIMD`; an atomic load once known).
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_fma() -> bool {
    simd_level() >= SimdLevel::Avx2
}

/// Whether the wide symmetric tiles and the tall packed tiles run on AVX-512 (AVX-512VL:
/// 32 registers for 256-bit code too). Without it the wide symmetric tiles' portable twin
/// gives the same sums bit for bit but is too slow to pay: wide passes then read full rows.
pub(crate) fn has_avx512() -> bool {
    simd_level() == SimdLevel::Avx512
}

fn reduce_lanes<F: Real, const N: usize>(mut lanes: [F; N]) -> F {
    let mut width = N;
    while width > 1 {
        width /= 2;
        for lane in 0..width {
            lanes[lane] += lanes[lane + width];
        }
    }
    lanes[0]
}

/// A dot product's lanes summed pairwise, then `row[l]·x(l)` for the columns `body..` left
/// over, in ascending order.
fn with_tail<F: Real>(lanes: [F; LANES], row: &[F], body: usize, x: impl Fn(usize) -> F) -> F {
    let mut sum = reduce_lanes(lanes);
    for (l, &value) in row.iter().enumerate().skip(body) {
        sum = value.mul_add(x(l), sum);
    }
    sum
}

/// The tile of [`Dots::tile`] with `W` lanes per output (the SIMD width of `F`).
fn portable_tile<F: Real, const ROWS: usize, const R: usize, const W: usize>(
    rows: [&[F]; ROWS],
    rhs: [&[F]; R],
    range: std::ops::Range<usize>,
    acc: &mut [[F; W]],
    stride: usize,
) {
    for start in range.step_by(W) {
        for (o, row) in rows.iter().enumerate() {
            for (j, x) in rhs.iter().enumerate() {
                for (lane, lane_sum) in acc[o * stride + j].iter_mut().enumerate() {
                    *lane_sum = row[start + lane].mul_add(x[start + lane], *lane_sum);
                }
            }
        }
    }
}

/// The tile of [`Dots::packed_tile`] with `W` lanes per SIMD vector.
fn portable_packed_tile<F: Real, const ROWS: usize, const V: usize, const W: usize>(
    rows: [&[F]; ROWS],
    packed: &[F],
    stride: usize,
    range: std::ops::Range<usize>,
    acc: &mut [[F; W]],
) {
    for l in range {
        let column = &packed[l * stride..l * stride + V * W];
        for (o, row) in rows.iter().enumerate() {
            for (v, lanes) in acc[o * V..(o + 1) * V].iter_mut().enumerate() {
                for (lane, sum) in lanes.iter_mut().enumerate() {
                    *sum = row[l].mul_add(column[v * W + lane], *sum);
                }
            }
        }
    }
}

/// The tile of [`Dots::symmetric_tile`] with `W` lanes per output.
fn portable_symmetric_tile<F: Real, const ROWS: usize, const R: usize, const W: usize>(
    rows: [&[F]; ROWS],
    rhs: [&[F]; R],
    coefficients: [[F; R]; ROWS],
    range: std::ops::Range<usize>,
    acc: &mut [[F; W]],
    stride: usize,
    mut buffers: [&mut [F]; R],
) {
    let start = range.start;
    portable_tile(rows, rhs, range.clone(), acc, stride);
    for l in range {
        for (j, buffer) in buffers.iter_mut().enumerate() {
            let value = &mut buffer[l - start];
            for (row, c) in rows.iter().zip(&coefficients) {
                *value = row[l].mul_add(c[j], *value);
            }
        }
    }
}

/// The tile of [`Dots::symmetric_wide_tile`] with `W` lanes per output: the AVX-512
/// tile's sums, bit for bit.
fn portable_symmetric_wide_tile<F: Real, const ROWS: usize, const N: usize, const W: usize>(
    rows: [&[F]; ROWS],
    rhs: [&[F]; N],
    coefficients: [[F; N]; ROWS],
    range: std::ops::Range<usize>,
    sums: &mut [F],
    stride: usize,
    mut buffers: [&mut [F]; N],
) {
    let mut lanes = [[[F::zero(); W]; N]; ROWS];
    for chunk in range.clone().step_by(W) {
        let filled = W.min(range.end - chunk);
        for (j, buffer) in buffers.iter_mut().enumerate() {
            for (lane, l) in (chunk..chunk + filled).enumerate() {
                let value = &mut buffer[l - range.start];
                for (o, row) in rows.iter().enumerate() {
                    lanes[o][j][lane] = row[l].mul_add(rhs[j][l], lanes[o][j][lane]);
                    *value = row[l].mul_add(coefficients[o][j], *value);
                }
            }
            // The masked lanes of the SIMD tile's last step add 0·0 (a −0 becomes +0).
            for by_rhs in lanes.iter_mut() {
                for lane in &mut by_rhs[j][filled..] {
                    *lane = F::zero().mul_add(F::zero(), *lane);
                }
            }
        }
    }
    for (o, by_rhs) in lanes.into_iter().enumerate() {
        for (j, lanes) in by_rhs.into_iter().enumerate() {
            sums[o * stride + j] += reduce_lanes(lanes);
        }
    }
}

fn portable_subtract_terms<F: Real, const R: usize>(
    out: &mut [F],
    vectors: [&[F]; R],
    coefficients: [F; R],
) {
    for (l, value) in out.iter_mut().enumerate() {
        for (vector, &c) in vectors.iter().zip(&coefficients) {
            *value = (-c).mul_add(vector[l], *value);
        }
    }
}

/// The tile of [`Dots::combine_tile`] with `W` lanes per SIMD vector.
fn portable_combine_tile<F: Real, const O: usize, const V: usize, const W: usize>(
    outs: &mut [&mut [F]],
    vectors: &[&[F]],
    coefficients: &[&[F]],
    at: usize,
) {
    for (out, c) in outs.iter_mut().zip(coefficients).take(O) {
        for l in at..at + V * W {
            for (vector, &c) in vectors.iter().zip(c.iter()) {
                out[l] = (-c).mul_add(vector[l], out[l]);
            }
        }
    }
}

/// [`portable_dots`] of `row` with `[positive, negative, weight∘row]` (the fallback of
/// machines without AVX2/FMA, where a buffer for `weight∘row` costs little beside the loop).
fn portable_row_statistics<F: Real>(
    row: &[F],
    positive: &[F],
    negative: &[F],
    weight: &[F],
) -> [F; 3] {
    let weighted: Vec<F> = row.iter().zip(weight).map(|(&r, &w)| w * r).collect();
    portable_dots(row, [positive, negative, &weighted])
}

fn portable_dots<F: Real, const R: usize>(row: &[F], rhs: [&[F]; R]) -> [F; R] {
    let n = row.len();
    let body = n - n % LANES;
    let mut acc = [[F::zero(); LANES]; R];
    for (chunk_index, row_chunk) in row[..body].chunks_exact(LANES).enumerate() {
        let base = chunk_index * LANES;
        for (lane_acc, x) in acc.iter_mut().zip(rhs.iter()) {
            for ((a, r), v) in lane_acc
                .iter_mut()
                .zip(row_chunk)
                .zip(&x[base..base + LANES])
            {
                *a += *r * *v;
            }
        }
    }
    let mut result = [F::zero(); R];
    for ((sum, lanes), x) in result.iter_mut().zip(acc).zip(rhs.iter()) {
        *sum = reduce_lanes(lanes);
        for (value, xv) in row[body..].iter().zip(&x[body..]) {
            *sum += *value * *xv;
        }
    }
    result
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use super::{with_tail, LANES, PREFETCH_AHEAD};
    use std::arch::x86_64::*;

    /// [`super::Dots::subtract_terms`] with 4-wide fused negated multiply-adds.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn subtract_terms_f64<const R: usize>(
        out: &mut [f64],
        vectors: [&[f64]; R],
        coefficients: [f64; R],
    ) {
        let n = out.len();
        assert!(vectors.iter().all(|v| v.len() >= n));
        let body = n - n % 4;
        let broadcast: [__m256d; R] = std::array::from_fn(|r| _mm256_set1_pd(coefficients[r]));
        let mut l = 0;
        while l < body {
            // SAFETY: l + 4 <= n, within `out` and every vector (asserted above).
            unsafe {
                let mut value = _mm256_loadu_pd(out.as_ptr().add(l));
                for r in 0..R {
                    value = _mm256_fnmadd_pd(
                        broadcast[r],
                        _mm256_loadu_pd(vectors[r].as_ptr().add(l)),
                        value,
                    );
                }
                _mm256_storeu_pd(out.as_mut_ptr().add(l), value);
            }
            l += 4;
        }
        for l in body..n {
            for r in 0..R {
                out[l] = (-coefficients[r]).mul_add(vectors[r][l], out[l]);
            }
        }
    }

    /// [`super::Dots::subtract_terms`] with 8-wide fused negated multiply-adds.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn subtract_terms_f32<const R: usize>(
        out: &mut [f32],
        vectors: [&[f32]; R],
        coefficients: [f32; R],
    ) {
        let n = out.len();
        assert!(vectors.iter().all(|v| v.len() >= n));
        let body = n - n % 8;
        let broadcast: [__m256; R] = std::array::from_fn(|r| _mm256_set1_ps(coefficients[r]));
        let mut l = 0;
        while l < body {
            // SAFETY: l + 8 <= n, within `out` and every vector (asserted above).
            unsafe {
                let mut value = _mm256_loadu_ps(out.as_ptr().add(l));
                for r in 0..R {
                    value = _mm256_fnmadd_ps(
                        broadcast[r],
                        _mm256_loadu_ps(vectors[r].as_ptr().add(l)),
                        value,
                    );
                }
                _mm256_storeu_ps(out.as_mut_ptr().add(l), value);
            }
            l += 8;
        }
        for l in body..n {
            for r in 0..R {
                out[l] = (-coefficients[r]).mul_add(vectors[r][l], out[l]);
            }
        }
    }

    /// One 4-wide f64 accumulator per output; each loaded row element feeds `R` FMAs and
    /// each right-hand side element `ROWS`, so a 4×3 tile makes 12 FMAs per 7 loads.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile_f64<const ROWS: usize, const R: usize>(
        rows: [&[f64]; ROWS],
        rhs: [&[f64]; R],
        range: std::ops::Range<usize>,
        acc: &mut [[f64; 4]],
        stride: usize,
    ) {
        assert!(rows.iter().all(|row| row.len() >= range.end));
        assert!(rhs.iter().all(|x| x.len() >= range.end));
        assert!(acc.len() >= (ROWS - 1) * stride + R);
        debug_assert_eq!(range.len() % 4, 0);
        let mut registers = [[_mm256_setzero_pd(); R]; ROWS];
        for r in 0..ROWS {
            for j in 0..R {
                // SAFETY: one 4-wide vector from 4 lanes.
                registers[r][j] = unsafe { _mm256_loadu_pd(acc[r * stride + j].as_ptr()) };
            }
        }
        let mut l = range.start;
        while l < range.end {
            // SAFETY: l + 4 <= range.end, within every row and rhs (asserted above).
            unsafe {
                let mut k = [_mm256_setzero_pd(); ROWS];
                for r in 0..ROWS {
                    k[r] = _mm256_loadu_pd(rows[r].as_ptr().add(l));
                }
                for j in 0..R {
                    let x = _mm256_loadu_pd(rhs[j].as_ptr().add(l));
                    for r in 0..ROWS {
                        registers[r][j] = _mm256_fmadd_pd(k[r], x, registers[r][j]);
                    }
                }
            }
            l += 4;
        }
        for r in 0..ROWS {
            for j in 0..R {
                // SAFETY: one 4-wide vector into 4 lanes.
                unsafe { _mm256_storeu_pd(acc[r * stride + j].as_mut_ptr(), registers[r][j]) };
            }
        }
    }

    /// One 8-wide f32 accumulator per output (see [`tile_f64`]).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile_f32<const ROWS: usize, const R: usize>(
        rows: [&[f32]; ROWS],
        rhs: [&[f32]; R],
        range: std::ops::Range<usize>,
        acc: &mut [[f32; 8]],
        stride: usize,
    ) {
        assert!(rows.iter().all(|row| row.len() >= range.end));
        assert!(rhs.iter().all(|x| x.len() >= range.end));
        assert!(acc.len() >= (ROWS - 1) * stride + R);
        debug_assert_eq!(range.len() % 8, 0);
        let mut registers = [[_mm256_setzero_ps(); R]; ROWS];
        for r in 0..ROWS {
            for j in 0..R {
                // SAFETY: one 8-wide vector from 8 lanes.
                registers[r][j] = unsafe { _mm256_loadu_ps(acc[r * stride + j].as_ptr()) };
            }
        }
        let mut l = range.start;
        while l < range.end {
            // SAFETY: l + 8 <= range.end, within every row and rhs (asserted above).
            unsafe {
                let mut k = [_mm256_setzero_ps(); ROWS];
                for r in 0..ROWS {
                    k[r] = _mm256_loadu_ps(rows[r].as_ptr().add(l));
                }
                for j in 0..R {
                    let x = _mm256_loadu_ps(rhs[j].as_ptr().add(l));
                    for r in 0..ROWS {
                        registers[r][j] = _mm256_fmadd_ps(k[r], x, registers[r][j]);
                    }
                }
            }
            l += 8;
        }
        for r in 0..ROWS {
            for j in 0..R {
                // SAFETY: one 8-wide vector into 8 lanes.
                unsafe { _mm256_storeu_ps(acc[r * stride + j].as_mut_ptr(), registers[r][j]) };
            }
        }
    }

    /// The tile of a wide pass (see [`super::Dots::packed_tile`]): per column, `V` loads of
    /// the packed right-hand sides and one broadcast per row feed `ROWS·V` FMAs into
    /// accumulators that stay in registers (6 × 2, 6 × 1 or a leftover row; the 4 × 3 tile
    /// is `packed_tile_4x3!`).
    macro_rules! packed_tile {
        ($name:ident, $features:literal, $t:ty, $w:literal, $load:ident, $store:ident, $fmadd:ident, $broadcast:ident, $zero:ident) => {
            #[target_feature(enable = $features)]
            pub(super) unsafe fn $name<const ROWS: usize, const V: usize>(
                rows: [&[$t]; ROWS],
                packed: &[$t],
                stride: usize,
                range: std::ops::Range<usize>,
                acc: &mut [[$t; $w]],
            ) {
                assert!(rows.iter().all(|row| row.len() >= range.end));
                assert!(range.is_empty() || packed.len() >= (range.end - 1) * stride + V * $w);
                assert!(acc.len() >= ROWS * V);
                let mut registers = [[$zero(); V]; ROWS];
                for o in 0..ROWS {
                    for v in 0..V {
                        // SAFETY: one SIMD vector from its lanes.
                        registers[o][v] = unsafe { $load(acc[o * V + v].as_ptr()) };
                    }
                }
                for l in range {
                    // SAFETY: l < range.end, within every row, and l·stride + V·width <=
                    // packed.len() (asserted above).
                    unsafe {
                        let column = packed.as_ptr().add(l * stride);
                        let mut x = [$zero(); V];
                        for v in 0..V {
                            x[v] = $load(column.add(v * $w));
                        }
                        for o in 0..ROWS {
                            let k = $broadcast(&*rows[o].as_ptr().add(l));
                            for v in 0..V {
                                registers[o][v] = $fmadd(k, x[v], registers[o][v]);
                            }
                        }
                    }
                }
                for o in 0..ROWS {
                    for v in 0..V {
                        // SAFETY: one SIMD vector into its lanes.
                        unsafe { $store(acc[o * V + v].as_mut_ptr(), registers[o][v]) };
                    }
                }
            }
        };
    }
    /// Both types' tiles, compiled for `$features`.
    macro_rules! packed_tiles {
        ($f64:ident, $f32:ident, $features:literal) => {
            packed_tile!(
                $f64,
                $features,
                f64,
                4,
                _mm256_loadu_pd,
                _mm256_storeu_pd,
                _mm256_fmadd_pd,
                _mm256_broadcast_sd,
                _mm256_setzero_pd
            );
            packed_tile!(
                $f32,
                $features,
                f32,
                8,
                _mm256_loadu_ps,
                _mm256_storeu_ps,
                _mm256_fmadd_ps,
                _mm256_broadcast_ss,
                _mm256_setzero_ps
            );
        };
    }
    packed_tiles!(packed_tile_f64, packed_tile_f32, "avx2,fma");
    // The same tiles where AVX-512VL gives 256-bit code 32 registers instead of 16: room for
    // 8 rows × 3 vectors of accumulators (24), each right-hand-side vector loaded then feeding
    // twice the rows of the 4 × 3 tile.
    packed_tiles!(
        packed_tile_512_f64,
        packed_tile_512_f32,
        "avx512f,avx512vl,avx2,fma"
    );

    /// The 4 × 3 tile of a wide pass ([`super::Dots::packed_tile`] with `ROWS = 4`,
    /// `V = 3`): 12 accumulators, the column's 3 right-hand-side vectors and one broadcast
    /// register, all 16. Each column's vectors, loaded once from the packed block, feed 12
    /// FMAs instead of 9, so the tile reads a quarter less from L2 per FMA, which bounds the
    /// 3 × 3 tile. In assembly because the compiler spills this tile with intrinsics (~1.4×
    /// slower than 3 × 3). The same fused multiply-adds in the same order as the tiles of
    /// `packed_tile!`.
    macro_rules! packed_tile_4x3 {
        ($name:ident, $t:ty, $w:literal, $scalar:literal, $packed:literal, $size:literal, $bytes:literal, $load:ident, $store:ident, $zero:ident) => {
            #[target_feature(enable = "avx2,fma")]
            pub(super) unsafe fn $name(
                rows: [&[$t]; 4],
                packed: &[$t],
                stride: usize,
                range: std::ops::Range<usize>,
                acc: &mut [[$t; $w]],
            ) {
                assert!(rows.iter().all(|row| row.len() >= range.end));
                assert!(range.is_empty() || packed.len() >= (range.end - 1) * stride + 3 * $w);
                assert!(acc.len() >= 12);
                if range.is_empty() {
                    return;
                }
                let mut registers = [$zero(); 12];
                for (register, lanes) in registers.iter_mut().zip(acc.iter()) {
                    // SAFETY: one SIMD vector from its lanes.
                    *register = unsafe { $load(lanes.as_ptr()) };
                }
                // SAFETY: for l in range, rows[o][l] is in bounds and so are the three
                // vectors at packed[l·stride..] (asserted); the loop runs at least once
                // (range is not empty) and only reads memory.
                unsafe {
                    std::arch::asm!(
                        "2:",
                        concat!("vmovu", $packed, " {x0}, ymmword ptr [{x}]"),
                        concat!("vmovu", $packed, " {x1}, ymmword ptr [{x} + 32]"),
                        concat!("vmovu", $packed, " {x2}, ymmword ptr [{x} + 64]"),
                        concat!("vbroadcast", $scalar, " {k}, ", $size, " ptr [{r0} + {l}*", $bytes, "]"),
                        concat!("vfmadd231", $packed, " {a00}, {k}, {x0}"),
                        concat!("vfmadd231", $packed, " {a01}, {k}, {x1}"),
                        concat!("vfmadd231", $packed, " {a02}, {k}, {x2}"),
                        concat!("vbroadcast", $scalar, " {k}, ", $size, " ptr [{r1} + {l}*", $bytes, "]"),
                        concat!("vfmadd231", $packed, " {a10}, {k}, {x0}"),
                        concat!("vfmadd231", $packed, " {a11}, {k}, {x1}"),
                        concat!("vfmadd231", $packed, " {a12}, {k}, {x2}"),
                        concat!("vbroadcast", $scalar, " {k}, ", $size, " ptr [{r2} + {l}*", $bytes, "]"),
                        concat!("vfmadd231", $packed, " {a20}, {k}, {x0}"),
                        concat!("vfmadd231", $packed, " {a21}, {k}, {x1}"),
                        concat!("vfmadd231", $packed, " {a22}, {k}, {x2}"),
                        concat!("vbroadcast", $scalar, " {k}, ", $size, " ptr [{r3} + {l}*", $bytes, "]"),
                        concat!("vfmadd231", $packed, " {a30}, {k}, {x0}"),
                        concat!("vfmadd231", $packed, " {a31}, {k}, {x1}"),
                        concat!("vfmadd231", $packed, " {a32}, {k}, {x2}"),
                        "add {x}, {step}",
                        "inc {l}",
                        "cmp {l}, {end}",
                        "jb 2b",
                        r0 = in(reg) rows[0].as_ptr(),
                        r1 = in(reg) rows[1].as_ptr(),
                        r2 = in(reg) rows[2].as_ptr(),
                        r3 = in(reg) rows[3].as_ptr(),
                        x = inout(reg) packed.as_ptr().add(range.start * stride) => _,
                        l = inout(reg) range.start => _,
                        end = in(reg) range.end,
                        step = in(reg) stride * std::mem::size_of::<$t>(),
                        k = out(ymm_reg) _,
                        x0 = out(ymm_reg) _,
                        x1 = out(ymm_reg) _,
                        x2 = out(ymm_reg) _,
                        a00 = inout(ymm_reg) registers[0],
                        a01 = inout(ymm_reg) registers[1],
                        a02 = inout(ymm_reg) registers[2],
                        a10 = inout(ymm_reg) registers[3],
                        a11 = inout(ymm_reg) registers[4],
                        a12 = inout(ymm_reg) registers[5],
                        a20 = inout(ymm_reg) registers[6],
                        a21 = inout(ymm_reg) registers[7],
                        a22 = inout(ymm_reg) registers[8],
                        a30 = inout(ymm_reg) registers[9],
                        a31 = inout(ymm_reg) registers[10],
                        a32 = inout(ymm_reg) registers[11],
                        options(nostack, readonly),
                    );
                }
                for (register, lanes) in registers.iter().zip(acc.iter_mut()) {
                    // SAFETY: one SIMD vector into its lanes.
                    unsafe { $store(lanes.as_mut_ptr(), *register) };
                }
            }
        };
    }
    packed_tile_4x3!(
        packed_tile_4x3_f64,
        f64,
        4,
        "sd",
        "pd",
        "qword",
        "8",
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_setzero_pd
    );
    packed_tile_4x3!(
        packed_tile_4x3_f32,
        f32,
        8,
        "ss",
        "ps",
        "dword",
        "4",
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_setzero_ps
    );

    /// The tile of a combination (see [`super::Dots::combine_tile`]): `O·V` accumulators
    /// (at most 5 × 2) with, per term, `V` loads of its piece and `O` broadcasts of its
    /// coefficients, 13 of the 16 registers.
    macro_rules! combine_tile {
        ($name:ident, $t:ty, $w:literal, $load:ident, $store:ident, $fnmadd:ident, $broadcast:ident, $zero:ident) => {
            #[target_feature(enable = "avx2,fma")]
            pub(super) unsafe fn $name<const O: usize, const V: usize>(
                outs: &mut [&mut [$t]],
                vectors: &[&[$t]],
                coefficients: &[&[$t]],
                at: usize,
            ) {
                let end = at + V * $w;
                assert!(outs.len() == O && coefficients.len() == O);
                assert!(outs.iter().all(|out| out.len() >= end));
                assert!(vectors.iter().all(|vector| vector.len() >= end));
                assert!(coefficients.iter().all(|c| c.len() >= vectors.len()));
                let mut registers = [[$zero(); V]; O];
                for o in 0..O {
                    for v in 0..V {
                        // SAFETY: at + (v + 1)·width <= end <= outs[o].len() (asserted).
                        registers[o][v] = unsafe { $load(outs[o].as_ptr().add(at + v * $w)) };
                    }
                }
                for (r, vector) in vectors.iter().enumerate() {
                    // SAFETY: the pieces end within every vector, and r < vectors.len() <=
                    // every coefficients' length (asserted above).
                    unsafe {
                        let mut x = [$zero(); V];
                        for v in 0..V {
                            x[v] = $load(vector.as_ptr().add(at + v * $w));
                        }
                        _mm_prefetch::<_MM_HINT_T0>(
                            vector.as_ptr().wrapping_add(at + PREFETCH_AHEAD) as *const i8,
                        );
                        for o in 0..O {
                            let c = $broadcast(coefficients[o].get_unchecked(r));
                            for v in 0..V {
                                registers[o][v] = $fnmadd(c, x[v], registers[o][v]);
                            }
                        }
                    }
                }
                for o in 0..O {
                    for v in 0..V {
                        // SAFETY: as for the loads.
                        unsafe { $store(outs[o].as_mut_ptr().add(at + v * $w), registers[o][v]) };
                    }
                }
            }
        };
    }
    combine_tile!(
        combine_tile_f64,
        f64,
        4,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_fnmadd_pd,
        _mm256_broadcast_sd,
        _mm256_setzero_pd
    );
    combine_tile!(
        combine_tile_f32,
        f32,
        8,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_fnmadd_ps,
        _mm256_broadcast_ss,
        _mm256_setzero_ps
    );

    /// The fused tile of a symmetric pass: each kernel element loaded feeds `R` FMAs of
    /// the dot products and `R` of the transposed update, whose buffer is loaded and
    /// stored once per `ROWS` of them (4 rows, for 1 to 4 right-hand sides).
    macro_rules! symmetric_tile {
        ($name:ident, $t:ty, $w:literal, $load:ident, $store:ident, $fmadd:ident, $set1:ident, $zero:ident) => {
            #[target_feature(enable = "avx2,fma")]
            pub(super) unsafe fn $name<const ROWS: usize, const R: usize>(
                rows: [&[$t]; ROWS],
                rhs: [&[$t]; R],
                coefficients: [[$t; R]; ROWS],
                range: std::ops::Range<usize>,
                acc: &mut [[$t; $w]],
                stride: usize,
                buffers: [&mut [$t]; R],
            ) {
                assert!(rows.iter().all(|row| row.len() >= range.end));
                assert!(rhs.iter().all(|x| x.len() >= range.end));
                assert!(buffers.iter().all(|b| b.len() >= range.len()));
                assert!(acc.len() >= (ROWS - 1) * stride + R);
                debug_assert_eq!(range.len() % $w, 0);
                let factors: [[_; R]; ROWS] =
                    std::array::from_fn(|r| std::array::from_fn(|j| $set1(coefficients[r][j])));
                let mut registers = [[$zero(); R]; ROWS];
                for r in 0..ROWS {
                    for j in 0..R {
                        // SAFETY: one SIMD vector from its lanes.
                        registers[r][j] = unsafe { $load(acc[r * stride + j].as_ptr()) };
                    }
                }
                let mut l = range.start;
                while l < range.end {
                    // SAFETY: l + width <= range.end, within every row and rhs, and
                    // l − range.start + width <= range.len(), within every buffer.
                    unsafe {
                        let mut k = [$zero(); ROWS];
                        for r in 0..ROWS {
                            k[r] = $load(rows[r].as_ptr().add(l));
                        }
                        for j in 0..R {
                            let x = $load(rhs[j].as_ptr().add(l));
                            let target = buffers[j].as_mut_ptr().add(l - range.start);
                            let mut value = $load(target);
                            for r in 0..ROWS {
                                registers[r][j] = $fmadd(k[r], x, registers[r][j]);
                                value = $fmadd(k[r], factors[r][j], value);
                            }
                            $store(target, value);
                        }
                    }
                    l += $w;
                }
                for r in 0..ROWS {
                    for j in 0..R {
                        // SAFETY: one SIMD vector into its lanes.
                        unsafe { $store(acc[r * stride + j].as_mut_ptr(), registers[r][j]) };
                    }
                }
            }
        };
    }
    symmetric_tile!(
        symmetric_tile_f64,
        f64,
        4,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_fmadd_pd,
        _mm256_set1_pd,
        _mm256_setzero_pd
    );
    symmetric_tile!(
        symmetric_tile_f32,
        f32,
        8,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_fmadd_ps,
        _mm256_set1_ps,
        _mm256_setzero_ps
    );

    /// [`super::Dots::row_statistics`] of `ROWS` rows side by side: the dot products of
    /// each row with `[positive, negative, weight∘row]` ([`dots_f64`], [`dots_f32`]). Each
    /// row's lanes take the same multiply-adds in the same order whatever `ROWS`, so its sums
    /// are bit for bit those of one row alone. Compiled for AVX2 (one row at a time) and
    /// where AVX-512VL gives 32 registers for the 24 accumulators of four rows, which keep
    /// more reads of `K` in flight.
    macro_rules! row_statistics {
        ($f64:ident, $f32:ident, $features:literal) => {
            #[target_feature(enable = $features)]
            pub(super) unsafe fn $f64<const ROWS: usize>(
                rows: [&[f64]; ROWS],
                positive: &[f64],
                negative: &[f64],
                weight: &[f64],
            ) -> [[f64; 3]; ROWS] {
                let n = rows.first().map_or(0, |row| row.len());
                assert!(rows.iter().all(|row| row.len() == n));
                assert!(positive.len() >= n && negative.len() >= n && weight.len() >= n);
                let body = n - n % LANES;
                let mut low = [[_mm256_setzero_pd(); 3]; ROWS];
                let mut high = [[_mm256_setzero_pd(); 3]; ROWS];
                let mut i = 0;
                while i < body {
                    // SAFETY: i + 8 <= body <= n, within every slice (asserted above).
                    unsafe {
                        let (p, q, w) = (
                            positive.as_ptr().add(i),
                            negative.as_ptr().add(i),
                            weight.as_ptr().add(i),
                        );
                        for (o, row) in rows.iter().enumerate() {
                            let r0 = _mm256_loadu_pd(row.as_ptr().add(i));
                            let r1 = _mm256_loadu_pd(row.as_ptr().add(i + 4));
                            for (j, x) in [p, q].into_iter().enumerate() {
                                low[o][j] = _mm256_fmadd_pd(r0, _mm256_loadu_pd(x), low[o][j]);
                                high[o][j] =
                                    _mm256_fmadd_pd(r1, _mm256_loadu_pd(x.add(4)), high[o][j]);
                            }
                            let w0 = _mm256_mul_pd(_mm256_loadu_pd(w), r0);
                            let w1 = _mm256_mul_pd(_mm256_loadu_pd(w.add(4)), r1);
                            low[o][2] = _mm256_fmadd_pd(r0, w0, low[o][2]);
                            high[o][2] = _mm256_fmadd_pd(r1, w1, high[o][2]);
                        }
                    }
                    i += LANES;
                }
                let mut result = [[0.0; 3]; ROWS];
                for (o, row) in rows.iter().enumerate() {
                    for j in 0..3 {
                        let mut lanes = [0.0f64; LANES];
                        // SAFETY: `lanes` holds exactly two 4-wide vectors.
                        unsafe {
                            _mm256_storeu_pd(lanes.as_mut_ptr(), low[o][j]);
                            _mm256_storeu_pd(lanes.as_mut_ptr().add(4), high[o][j]);
                        }
                        result[o][j] = with_tail(lanes, row, body, |l| {
                            [positive[l], negative[l], weight[l] * row[l]][j]
                        });
                    }
                }
                result
            }

            #[target_feature(enable = $features)]
            pub(super) unsafe fn $f32<const ROWS: usize>(
                rows: [&[f32]; ROWS],
                positive: &[f32],
                negative: &[f32],
                weight: &[f32],
            ) -> [[f32; 3]; ROWS] {
                let n = rows.first().map_or(0, |row| row.len());
                assert!(rows.iter().all(|row| row.len() == n));
                assert!(positive.len() >= n && negative.len() >= n && weight.len() >= n);
                let body = n - n % LANES;
                let mut acc = [[_mm256_setzero_ps(); 3]; ROWS];
                let mut i = 0;
                while i < body {
                    // SAFETY: i + 8 <= body <= n, within every slice (asserted above).
                    unsafe {
                        let p = _mm256_loadu_ps(positive.as_ptr().add(i));
                        let q = _mm256_loadu_ps(negative.as_ptr().add(i));
                        let w = _mm256_loadu_ps(weight.as_ptr().add(i));
                        for (o, row) in rows.iter().enumerate() {
                            let r = _mm256_loadu_ps(row.as_ptr().add(i));
                            acc[o][0] = _mm256_fmadd_ps(r, p, acc[o][0]);
                            acc[o][1] = _mm256_fmadd_ps(r, q, acc[o][1]);
                            acc[o][2] = _mm256_fmadd_ps(r, _mm256_mul_ps(w, r), acc[o][2]);
                        }
                    }
                    i += LANES;
                }
                let mut result = [[0.0; 3]; ROWS];
                for (o, row) in rows.iter().enumerate() {
                    for j in 0..3 {
                        let mut lanes = [0.0f32; LANES];
                        // SAFETY: `lanes` holds exactly one 8-wide vector.
                        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc[o][j]) };
                        result[o][j] = with_tail(lanes, row, body, |l| {
                            [positive[l], negative[l], weight[l] * row[l]][j]
                        });
                    }
                }
                result
            }
        };
    }
    row_statistics!(row_statistics_f64, row_statistics_f32, "avx2,fma");
    row_statistics!(
        row_statistics_512_f64,
        row_statistics_512_f32,
        "avx512f,avx512vl,avx2,fma"
    );

    /// Eight f64 partial sums per right-hand side in two 4-wide registers.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dots_f64<const R: usize>(row: &[f64], rhs: [&[f64]; R]) -> [f64; R] {
        let n = row.len();
        let body = n - n % LANES;
        let mut low = [_mm256_setzero_pd(); R];
        let mut high = [_mm256_setzero_pd(); R];
        let mut i = 0;
        while i < body {
            // SAFETY: i + 8 <= body <= n, and every rhs has length n.
            unsafe {
                let r0 = _mm256_loadu_pd(row.as_ptr().add(i));
                let r1 = _mm256_loadu_pd(row.as_ptr().add(i + 4));
                for j in 0..R {
                    let x = rhs[j].as_ptr().add(i);
                    low[j] = _mm256_fmadd_pd(r0, _mm256_loadu_pd(x), low[j]);
                    high[j] = _mm256_fmadd_pd(r1, _mm256_loadu_pd(x.add(4)), high[j]);
                }
            }
            i += LANES;
        }
        let mut result = [0.0; R];
        for j in 0..R {
            let mut lanes = [0.0f64; LANES];
            // SAFETY: `lanes` holds exactly two 4-wide vectors.
            unsafe {
                _mm256_storeu_pd(lanes.as_mut_ptr(), low[j]);
                _mm256_storeu_pd(lanes.as_mut_ptr().add(4), high[j]);
            }
            result[j] = with_tail(lanes, row, body, |l| rhs[j][l]);
        }
        result
    }

    /// Eight f32 partial sums per right-hand side in one 8-wide register.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dots_f32<const R: usize>(row: &[f32], rhs: [&[f32]; R]) -> [f32; R] {
        let n = row.len();
        let body = n - n % LANES;
        let mut acc = [_mm256_setzero_ps(); R];
        let mut i = 0;
        while i < body {
            // SAFETY: i + 8 <= body <= n, and every rhs has length n.
            unsafe {
                let r = _mm256_loadu_ps(row.as_ptr().add(i));
                for j in 0..R {
                    acc[j] = _mm256_fmadd_ps(r, _mm256_loadu_ps(rhs[j].as_ptr().add(i)), acc[j]);
                }
            }
            i += LANES;
        }
        let mut result = [0.0; R];
        for j in 0..R {
            let mut lanes = [0.0f32; LANES];
            // SAFETY: `lanes` holds exactly one 8-wide vector.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc[j]) };
            result[j] = with_tail(lanes, row, body, |l| rhs[j][l]);
        }
        result
    }
}

/// The wide symmetric tile on AVX-512 (32 registers of 8 `f64` or 16 `f32`): 4 rows × up to
/// 6 right-hand sides of dot-product lanes stay in 24 registers while the rows stream.
#[cfg(target_arch = "x86_64")]
mod simd512 {
    use super::reduce_lanes;
    use std::arch::x86_64::*;

    /// Elements ahead of the tile's columns that each row is prefetched (2 KiB in `f64`).
    const WIDE_PREFETCH: usize = 256;

    macro_rules! symmetric_wide_tile {
        ($name:ident, $t:ty, $w:literal, $mask:ty, $maskz_load:ident, $store:ident, $mask_store:ident, $fmadd:ident, $set1:ident, $zero:ident) => {
            /// [`super::Dots::symmetric_wide_tile`]: per `$w` columns, each row's vector
            /// loaded once feeds `N` FMAs of its dot products and `N` of the transposed
            /// update, whose buffer is loaded and stored once per `ROWS` of them. The last
            /// columns go by masked loads and stores, so no column is left to scalar code.
            #[allow(clippy::too_many_arguments)]
            #[target_feature(enable = "avx512f")]
            pub(super) unsafe fn $name<const ROWS: usize, const N: usize>(
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
}

/// Rows of `K` per register tile: each right-hand-side element loaded feeds this many FMAs.
/// Rows of `K` per parallel task: large enough to amortise scheduling, small enough to
/// balance two threads on a shared machine.
const ROWS_PER_TASK: usize = 32;

/// Columns of `K` that a pass multiplies together: for the lane-wise tiles, runs whose
/// lengths are multiples of the SIMD width and the columns left over, summed last in
/// ascending order; for the packed tiles, the maximal runs themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnGroup {
    runs: Vec<std::ops::Range<usize>>,
    rest: Vec<usize>,
    whole: Vec<std::ops::Range<usize>>,
}

impl ColumnGroup {
    /// Every column of an `m×m` kernel.
    pub fn all<F: Real>(m: usize) -> Self {
        Self::of_runs::<F>(std::iter::once(0..m))
    }

    /// The columns where `labels` equals `class`, as maximal runs.
    pub fn of_class<F: Real>(labels: &[bool], class: bool) -> Self {
        let mut runs = Vec::new();
        let mut start = None;
        for (i, &label) in labels.iter().chain(std::iter::once(&!class)).enumerate() {
            match (label == class, start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    runs.push(s..i);
                    start = None;
                }
                _ => {}
            }
        }
        Self::of_runs::<F>(runs.into_iter())
    }

    fn of_runs<F: Real>(runs: impl Iterator<Item = std::ops::Range<usize>>) -> Self {
        let mut group = ColumnGroup {
            runs: Vec::new(),
            rest: Vec::new(),
            whole: Vec::new(),
        };
        for run in runs {
            group.whole.push(run.clone());
            let body_end = run.end - run.len() % F::WIDTH;
            if body_end > run.start {
                group.runs.push(run.start..body_end);
            }
            group.rest.extend(body_end..run.end);
        }
        group
    }

    /// Number of maximal runs of equal labels: a pass split by class pays a little per run.
    pub fn count_runs(labels: &[bool]) -> usize {
        1 + labels.windows(2).filter(|pair| pair[0] != pair[1]).count()
    }
}

/// Buffers that the passes reuse from one call to the next: per band of a symmetric pass,
/// its dot products' lanes and scalars and its transposed buffer (~0.5 MB at m = 4,000);
/// for a wide pass, its packed right-hand sides and its row-major outputs (~1 MB).
/// Allocated afresh for every pass, they went back to the kernel when freed (glibc trims
/// the arenas of rayon's workers, and maps large blocks apart) and came back as fresh
/// pages: ~27,000 page faults in a stage-1 fit at m = 4,000.
#[derive(Default)]
pub struct Workspace<F: Real> {
    bands: Vec<BandBuffers<F>>,
    packed: Vec<Vec<F>>,
    packed_out: Vec<F>,
}

struct BandBuffers<F: Real> {
    lanes: Vec<F::Lanes>,
    scalars: Vec<F>,
    buffer: Vec<F>,
}

// By hand: a derive would ask `F::Lanes: Default`, which arrays of any width are not.
impl<F: Real> Default for BandBuffers<F> {
    fn default() -> Self {
        BandBuffers {
            lanes: Vec::new(),
            scalars: Vec::new(),
            buffer: Vec::new(),
        }
    }
}

/// `len` copies of `value` in `buffer`, reusing its memory.
fn refill<T: Copy>(buffer: &mut Vec<T>, len: usize, value: T) {
    buffer.clear();
    buffer.resize(len, value);
}

/// `K · x_j` for every right-hand side, with `K` row-major `m×m`; one pass over `K`.
/// Returns one vector per right-hand side.
pub fn multiply<F: Real>(
    pool: &rayon::ThreadPool,
    kernel: &[F],
    m: usize,
    rhs: &[&[F]],
    workspace: &mut Workspace<F>,
) -> Vec<Vec<F>> {
    let groups = [ColumnGroup::all::<F>(m)];
    let mut by_group = multiply_groups(pool, kernel, m, rhs, &groups, workspace);
    by_group.pop().unwrap_or_default()
}

/// `K · x_j` for every right-hand side, reading all of `K` (row-major `m×m`) in one pass,
/// each product one running sum over its row in ascending column order whatever the
/// number of right-hand sides, threads or tiles: the packed tiles of wide passes, for any
/// width. Selections that share their passes over one kernel
/// ([`crate::greedy::select_many`]) so get the same products whichever others share them.
pub fn multiply_in_order<F: Real>(
    pool: &rayon::ThreadPool,
    kernel: &[F],
    m: usize,
    rhs: &[&[F]],
    workspace: &mut Workspace<F>,
) -> Vec<Vec<F>> {
    debug_assert!(rhs.iter().all(|x| x.len() == m));
    debug_assert_eq!(kernel.len(), m * m);
    if rhs.is_empty() {
        return Vec::new();
    }
    let groups = [ColumnGroup::all::<F>(m)];
    let row = |i: usize| &kernel[i * m..(i + 1) * m];
    let mut by_group = products_packed(pool, m, row, rhs, &groups, workspace);
    by_group.pop().unwrap_or_default()
}

/// `K[:, g] · x_j[g]` for every column group `g` and right-hand side `x_j`, in one pass
/// over `K`: `out[g][j]`. With the two classes as groups, `K x` and `K D x` for a
/// class-constant diagonal `D` come from one multiply-add per kernel element when the
/// classes are contiguous, where `[x, Dx]` would take two.
///
/// Rows go by fixed blocks to the threads and by register tiles to the FMA units (4 rows
/// × up to 2 right-hand sides, lane-wise; for wide passes such as a fused stage, 4 rows ×
/// 12 right-hand sides packed column by column, each kernel element broadcast to all of
/// them, or 8 rows × 12 on AVX-512): the tile's accumulators stay in registers while its
/// rows stream from memory.
/// Every output is summed in one order whatever the number of threads or the tile shapes.
///
/// `K` must be symmetric: passes with one or two right-hand sides, bound by the speed of
/// memory, read only its upper triangle (`symmetric_products`), and so do passes with 3
/// to 6 on a CPU with AVX-512 (every column in a group): their tiles of 4 rows × up to 6
/// right-hand sides, lanes along the columns, fill every lane, and the pass reads half
/// the bytes (stage-3 selections 1.27–1.34× faster at m = 4,000, against 1.02–1.08× with
/// full rows by the tall tiles alone; `profile_greedy`, docs/PERFORMANCE.md).
pub fn multiply_groups<F: Real>(
    pool: &rayon::ThreadPool,
    kernel: &[F],
    m: usize,
    rhs: &[&[F]],
    groups: &[ColumnGroup],
    workspace: &mut Workspace<F>,
) -> Vec<Vec<Vec<F>>> {
    debug_assert!(rhs.iter().all(|x| x.len() == m));
    debug_assert_eq!(kernel.len(), m * m);
    if reads_triangle(m, rhs.len()) {
        return symmetric_products(pool, kernel, m, rhs, groups, SYMMETRIC_BANDS, workspace);
    }
    multiply_groups_full_rows(pool, kernel, m, rhs, groups, workspace)
}

/// [`multiply_groups`] reading whole rows of `K` whatever the number of right-hand sides:
/// what a wide pass does on a machine without AVX-512 (and the yardstick of the wide
/// symmetric pass in `examples/pass_speed.rs`).
pub fn multiply_groups_full_rows<F: Real>(
    pool: &rayon::ThreadPool,
    kernel: &[F],
    m: usize,
    rhs: &[&[F]],
    groups: &[ColumnGroup],
    workspace: &mut Workspace<F>,
) -> Vec<Vec<Vec<F>>> {
    debug_assert!(rhs.iter().all(|x| x.len() == m));
    debug_assert_eq!(kernel.len(), m * m);
    let row = |i: usize| &kernel[i * m..(i + 1) * m];
    products(pool, m, row, rhs, groups, workspace)
}

/// Products split by column group and right-hand side: `out[g][j][i]`.
pub type GroupedProducts<F> = Vec<Vec<Vec<F>>>;

/// [`multiply_groups`] and, from the same call, `rows[t][g]·x_j[g]` for every extra row
/// `t` (`(out[g][j], row_out[g][j][t])`): a wide pass reads the extra rows after `K`'s,
/// so that they share its packed blocks of right-hand sides (dot products with the
/// deflation terms for ~`rows.len()/m` of a pass, where a sweep of their own would read
/// each row once per block too); a narrow pass reads them after its triangle.
pub fn multiply_groups_with_rows<F: Real>(
    pool: &rayon::ThreadPool,
    kernel: &[F],
    m: usize,
    rows: &[Vec<F>],
    rhs: &[&[F]],
    groups: &[ColumnGroup],
    workspace: &mut Workspace<F>,
) -> (GroupedProducts<F>, GroupedProducts<F>) {
    debug_assert!(rows.iter().all(|row| row.len() == m));
    if reads_triangle(m, rhs.len()) {
        let products_k =
            symmetric_products(pool, kernel, m, rhs, groups, SYMMETRIC_BANDS, workspace);
        let products_rows = products(pool, rows.len(), |t| &rows[t], rhs, groups, workspace);
        return (products_k, products_rows);
    }
    products_and_extra_rows(
        pool,
        m,
        |i| &kernel[i * m..(i + 1) * m],
        rows,
        rhs,
        groups,
        workspace,
    )
}

/// [`products`] of `n` kernel rows (`kernel_row(o)`) followed by the extra `rows`, in one
/// call, returned apart: `(out[g][j][o], row_out[g][j][t])`.
fn products_and_extra_rows<'a, F: Real>(
    pool: &rayon::ThreadPool,
    n: usize,
    kernel_row: impl Fn(usize) -> &'a [F] + Sync,
    rows: &'a [Vec<F>],
    rhs: &[&[F]],
    groups: &[ColumnGroup],
    workspace: &mut Workspace<F>,
) -> (GroupedProducts<F>, GroupedProducts<F>) {
    let row = |o: usize| match o.checked_sub(n) {
        None => kernel_row(o),
        Some(t) => rows[t].as_slice(),
    };
    let mut products_kernel = products(pool, n + rows.len(), row, rhs, groups, workspace);
    let products_rows = products_kernel
        .iter_mut()
        .map(|by_rhs| by_rhs.iter_mut().map(|out| out.split_off(n)).collect())
        .collect();
    (products_kernel, products_rows)
}

/// The rows `picks` of [`multiply_groups_with_rows`]'s products and all its extra rows, from
/// those rows alone (`picks.len() + rows.len()` rows read, not `m`): `(out[g][j][s],
/// row_out[g][j][t])` for `K[picks[s], :]`. For three or more right-hand sides, each
/// output is the one a pass reading full rows gives ([`multiply_groups_full_rows`], and
/// that call where it reads full rows: see [`reads_triangle`]), bit for bit: a row's sums
/// do not depend on the rows it shares a tile with.
#[allow(clippy::too_many_arguments)]
pub fn multiply_groups_at_rows<F: Real>(
    pool: &rayon::ThreadPool,
    kernel: &[F],
    m: usize,
    picks: &[usize],
    rows: &[Vec<F>],
    rhs: &[&[F]],
    groups: &[ColumnGroup],
    workspace: &mut Workspace<F>,
) -> (GroupedProducts<F>, GroupedProducts<F>) {
    debug_assert!(rows.iter().all(|row| row.len() == m));
    let kernel_row = |o: usize| &kernel[picks[o] * m..(picks[o] + 1) * m];
    products_and_extra_rows(pool, picks.len(), kernel_row, rows, rhs, groups, workspace)
}

/// Whether a pass over an `m×m` kernel with `r` right-hand sides reads only its upper
/// triangle: narrow passes, bound by memory, of kernels large enough to pay for the bands;
/// and wider ones (a stage's) where AVX-512 gives the wide symmetric tile its 32 registers.
pub(crate) fn reads_triangle(m: usize, r: usize) -> bool {
    m >= SYMMETRIC_MIN_ORDER
        && (r <= NARROW_SYMMETRIC_MAX || (r <= WIDE_SYMMETRIC_MAX && has_avx512()))
}

/// Widest pass that reads only the upper triangle without AVX-512, by the narrow tiles of
/// 4 rows: at m = 4,000 on the AVX2 level, 3 and 4 vectors split by class ran 1.2–1.46×
/// faster than full rows (`f64` and `f32`), 5 and 6 at 0.9–1.05× (`examples/pass_speed`
/// with `GKFDA_SIMD=avx2`); stage-3 hotelling selections 1.04–1.39× faster, stage-4
/// projection 1.11–1.14×, the same picks.
const NARROW_SYMMETRIC_MAX: usize = 4;

/// Widest pass that reads only the upper triangle: a tile of 4 rows × 6 right-hand sides
/// keeps its dot products in 24 of AVX-512's 32 registers. Wider passes read full rows:
/// measured at m = 4,000 (`examples/pass_speed.rs`), wide symmetric passes by blocks of
/// 5–6 right-hand sides, or with tiles of 2 rows × up to 12, ran at 0.6–0.95× the speed
/// of full rows.
const WIDE_SYMMETRIC_MAX: usize = 6;

/// Smallest kernel whose narrow passes read only the upper triangle.
const SYMMETRIC_MIN_ORDER: usize = 64;
/// Bands of rows of a symmetric pass, fixed by `m` alone so that no sum depends on the
/// number of threads; enough to balance two threads on a shared machine.
const SYMMETRIC_BANDS: usize = 16;

/// The first row of each band, the bands' upper triangles of about equal size.
fn band_starts(m: usize, bands: usize) -> Vec<usize> {
    let total = (m * (m + 1) / 2) as f64;
    let (mut starts, mut area, mut i) = (vec![0], 0.0, 0);
    for band in 1..bands {
        let target = total * band as f64 / bands as f64;
        while i < m && area < target {
            area += (m - i) as f64;
            i += 1;
        }
        if i < m && starts.last().is_some_and(|&last| i > last) {
            starts.push(i);
        }
    }
    starts
}

/// [`multiply_groups`] for a symmetric `K`, reading its upper triangle only: element
/// `K[i,l]`, `i < l`, read once, adds `K[i,l]·x[l]` to output `i` (the dot product along
/// row `i`) and `K[i,l]·x[i]` to output `l` (a multiply-add into a buffer of the row's
/// band), both from one load of the element ([`Dots::symmetric_tile`]). The
/// same multiply-adds as a full pass from half the bytes: for the one or two right-hand
/// sides of a stage-1 pick, whose pass is bound by memory, ~1.5× faster at m = 4,000;
/// without AVX-512, up to [`NARROW_SYMMETRIC_MAX`] take these narrow tiles.
/// With 2 to 6 right-hand sides on AVX-512 the wide tiles ([`Dots::symmetric_wide_tile`])
/// take the same two halves, lanes along the columns; wider passes (a stage of 10) stay
/// with full rows, where the transposed update's loads and stores of the buffers, once
/// per 4 rows and right-hand side, made the triangle slower than the register tiles of
/// a full pass.
///
/// Output `i` sums, in this order: its row's lanes, the row's leftover columns and its
/// diagonal block, then the buffers of the bands at or before it, in band order. The bands
/// depend on `m` alone, so the result does not depend on the number of threads.
fn symmetric_products<F: Real>(
    pool: &rayon::ThreadPool,
    kernel: &[F],
    m: usize,
    rhs: &[&[F]],
    groups: &[ColumnGroup],
    bands: usize,
    workspace: &mut Workspace<F>,
) -> Vec<Vec<Vec<F>>> {
    let r = rhs.len();
    let width = groups.len() * r; // outputs per row, ordered (group, right-hand side)
    if width == 0 {
        return vec![Vec::new(); groups.len()];
    }
    let mut group_of: Vec<Option<usize>> = vec![None; m];
    let mut overlapping = false;
    for (g, group) in groups.iter().enumerate() {
        let columns = group.runs.iter().flat_map(|run| run.clone());
        for l in columns.chain(group.rest.iter().copied()) {
            overlapping |= group_of[l].replace(g).is_some();
        }
    }
    // On AVX-512 two right-hand sides take the wide tile too: the narrow 2 × 2 tile made a
    // two-vector pass 1.4× slower than a one-vector pass at m = 4,000 (2.85 against
    // 2.05 ms, `examples/pass_speed`), the wide one as fast as it (~1.8 ms), and a narrow
    // 4 × 2 tile ran selections at 0.89–1.0× the wide one's speed. Two-vector passes are
    // a schur stage's and a stage of 2's: stage-10 schur selections 1.14–1.34× faster,
    // stage-2 hotelling 1.20–1.67× (`profile_greedy`, alternating builds, the same picks).
    // Without AVX-512 only passes wider than the narrow tiles are wide, and they run the
    // wide tile's portable twin: the tests' passes; `reads_triangle` gives the engine's
    // full rows instead.
    let wide = r > NARROW_SYMMETRIC_MAX || (r >= 2 && has_avx512());
    // A row's transposed update goes to one group's outputs: groups sharing a column take
    // full rows, and so do wide passes with a column in no group (their tile updates both
    // halves).
    if overlapping || (wide && group_of.iter().any(Option::is_none)) {
        return multiply_groups_full_rows(pool, kernel, m, rhs, groups, workspace);
    }
    // Maximal runs of columns in one group: the dot products go run by run.
    let mut segments: Vec<(std::ops::Range<usize>, Option<usize>)> = Vec::new();
    for (l, &g) in group_of.iter().enumerate() {
        match segments.last_mut() {
            Some((run, last)) if *last == g => run.end = l + 1,
            _ => segments.push((l..l + 1, g)),
        }
    }
    let starts = band_starts(m, bands);
    let band_rows: Vec<std::ops::Range<usize>> = starts
        .iter()
        .enumerate()
        .map(|(b, &start)| start..starts.get(b + 1).copied().unwrap_or(m))
        .collect();
    if workspace.bands.len() < band_rows.len() {
        workspace
            .bands
            .resize_with(band_rows.len(), BandBuffers::default);
    }
    let band = |(rows, buffers): (&std::ops::Range<usize>, &mut BandBuffers<F>)| {
        refill(&mut buffers.lanes, rows.len() * width, F::zero_lanes());
        refill(&mut buffers.scalars, rows.len() * width, F::zero());
        refill(&mut buffers.buffer, width * (m - rows.start), F::zero());
        let mut band = SymmetricBand {
            kernel,
            m,
            rhs,
            group_of: &group_of,
            segments: &segments,
            width,
            wide,
            first_row: rows.start,
            lanes: &mut buffers.lanes,
            scalars: &mut buffers.scalars,
            buffer: &mut buffers.buffer,
        };
        #[cfg(target_arch = "x86_64")]
        if wide && has_avx512() {
            // SAFETY: AVX-512F, AVX2 and FMA are available (checked just above).
            unsafe { band.all_tiles_avx512(rows.clone()) };
        } else if has_fma() {
            // SAFETY: AVX2 and FMA are available (checked just above).
            unsafe { band.all_tiles_fma(rows.clone()) };
        } else {
            band.all_tiles(rows.clone());
        }
        #[cfg(not(target_arch = "x86_64"))]
        band.all_tiles(rows.clone());
        let own: Vec<F> = band
            .lanes
            .iter()
            .zip(band.scalars.iter())
            .map(|(&lanes, &scalar)| F::reduce(lanes) + scalar)
            .collect();
        own
    };
    let buffers = &mut workspace.bands[..band_rows.len()];
    let by_band: Vec<Vec<F>> = pool.install(|| {
        band_rows
            .par_iter()
            .zip(buffers.par_iter_mut())
            .map(band)
            .collect()
    });
    // Each output on its own thread (a wide pass's bands hold ~20 outputs of up to `m`
    // values each), summed in band order whatever the thread count.
    let bands_done = &workspace.bands[..band_rows.len()];
    let mut outputs: Vec<Vec<F>> = pool.install(|| {
        (0..width)
            .into_par_iter()
            .map(|w| {
                let mut output = vec![F::zero(); m];
                for (rows, own) in band_rows.iter().zip(&by_band) {
                    for (i, values) in rows.clone().zip(own.chunks_exact(width)) {
                        output[i] = values[w];
                    }
                }
                for (rows, buffers) in band_rows.iter().zip(bands_done) {
                    let len = m - rows.start;
                    let added = &buffers.buffer[w * len..(w + 1) * len];
                    let target = &mut output[rows.start..];
                    target.iter_mut().zip(added).for_each(|(t, &b)| *t += b);
                }
                output
            })
            .collect()
    });
    let mut out = Vec::with_capacity(groups.len());
    for _ in 0..groups.len() {
        let rest = outputs.split_off(r);
        out.push(std::mem::replace(&mut outputs, rest));
    }
    out
}

/// The state of one band of rows of a symmetric pass.
struct SymmetricBand<'a, F: Real> {
    kernel: &'a [F],
    m: usize,
    rhs: &'a [&'a [F]],
    group_of: &'a [Option<usize>],
    segments: &'a [(std::ops::Range<usize>, Option<usize>)],
    width: usize,
    /// Two or more right-hand sides on AVX-512: the wide tiles
    /// ([`Dots::symmetric_wide_tile`]).
    wide: bool,
    first_row: usize,
    /// Per row of the band and output: the lanes of the dot product right of the row's
    /// tile, and the scalar sum of its leftover columns and of its tile's block.
    lanes: &'a mut [F::Lanes],
    scalars: &'a mut [F],
    /// Per output, the transposed contributions to rows `first_row..m`.
    buffer: &'a mut [F],
}

impl<F: Real> SymmetricBand<'_, F> {
    /// The band's rows `rows`, tile by tile.
    #[inline(always)]
    fn all_tiles(&mut self, rows: std::ops::Range<usize>) {
        // 4 rows × 1 to 4 right-hand sides. From 2 the accumulators and factors leave too
        // few of AVX2's 16 registers for the rest, yet the compiler's schedule of 4 × 2
        // beat the 2 × 2 tile that fits (14 registers): a two-vector pass at
        // m = 4,000 in 2.1–2.2 against 2.7–3.0 ms (f64; f32 1.1 against 1.5), and
        // selections whose passes have two right-hand sides 1.12–1.37× faster at the AVX2
        // level, with the same picks (`GKFDA_SIMD=avx2`, `examples/pass_speed`,
        // `examples/profile_greedy`). The wide tile: 4 rows × up to 6 right-hand sides,
        // 24 of AVX-512's 32 registers.
        let tile_rows = 4;
        let mut i = rows.start;
        while i < rows.end {
            // The transposed update goes to the buffer of the tile's group: one per tile.
            let mut tile = tile_rows.min(rows.end - i);
            if (i..i + tile).any(|row| self.group_of[row] != self.group_of[i]) {
                tile = 1;
            }
            match tile {
                4 => self.tile::<4>(i),
                3 => self.tile::<3>(i),
                2 => self.tile::<2>(i),
                _ => self.tile::<1>(i),
            }
            i += tile;
        }
    }

    /// [`SymmetricBand::all_tiles`] compiled for AVX2 and FMA: the `mul_add`s of the
    /// diagonal blocks and leftover columns (`scalar_element`, inlined here) become FMA
    /// instructions, where the generic build calls libm's `fma` for each; the same values,
    /// since both round once. At m = 200 those calls were ~15 % of a selection's samples.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn all_tiles_fma(&mut self, rows: std::ops::Range<usize>) {
        self.all_tiles(rows);
    }

    /// [`SymmetricBand::all_tiles`] of a wide pass, compiled for AVX-512 (its tiles) and
    /// FMA (the scalar multiply-adds of its diagonal blocks and leftover columns).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn all_tiles_avx512(&mut self, rows: std::ops::Range<usize>) {
        self.all_tiles(rows);
    }

    /// Rows `i..i + T` (one group): the columns right of their block on the diagonal, run
    /// of column groups by run, then the block.
    #[inline(always)]
    fn tile<const T: usize>(&mut self, i: usize) {
        let (m, r) = (self.m, self.rhs.len());
        let rows: [&[F]; T] = std::array::from_fn(|t| &self.kernel[(i + t) * m..(i + t + 1) * m]);
        let row_group = self.group_of[i];
        let right = i + T;
        let first = self.segments.partition_point(|(run, _)| run.end <= right);
        for s in first..self.segments.len() {
            let (run, column_group) = self.segments[s].clone();
            let piece = run.start.max(right)..run.end;
            // The wide tiles take a whole piece: their last columns go masked.
            let step = if self.wide { 1 } else { F::WIDTH };
            let body = piece.start..piece.start + piece.len() / step * step;
            match r {
                _ if self.wide => {
                    self.body_wide::<T>(&rows, i, column_group, row_group, body.clone())
                }
                1 => self.body::<T, 1>(&rows, i, column_group, row_group, body.clone()),
                2 => self.body::<T, 2>(&rows, i, column_group, row_group, body.clone()),
                3 => self.body::<T, 3>(&rows, i, column_group, row_group, body.clone()),
                4 => self.body::<T, 4>(&rows, i, column_group, row_group, body.clone()),
                _ => {
                    unreachable!("narrow passes have 1 to {NARROW_SYMMETRIC_MAX} right-hand sides")
                }
            }
            // The columns left over, one by one.
            for (t, row) in rows.iter().enumerate() {
                for l in body.end..piece.end {
                    self.scalar_element(i + t, l, row[l], row_group);
                }
            }
        }
        // The block on the diagonal last: its cache lines are the rows' first, fetched by
        // the stream of the body (when they share a line with it) and not waited for alone.
        for (t, row) in rows.iter().enumerate() {
            self.scalar_element(i + t, i + t, row[i + t], None); // counted once
            for l in i + t + 1..right {
                self.scalar_element(i + t, l, row[l], row_group);
            }
        }
    }

    /// Element `K[i,l]`, `l ≥ i`, one by one: `K[i,l]·x[l]` into output `i` of the column's
    /// group and, when `row_group` is given, `K[i,l]·x[i]` into output `l` of that group.
    #[inline(always)]
    fn scalar_element(&mut self, i: usize, l: usize, value: F, row_group: Option<usize>) {
        let (r, len) = (self.rhs.len(), self.m - self.first_row);
        for (j, x) in self.rhs.iter().enumerate() {
            if let Some(g) = self.group_of[l] {
                let sum = &mut self.scalars[(i - self.first_row) * self.width + g * r + j];
                *sum = value.mul_add(x[l], *sum);
            }
            if let Some(g) = row_group {
                let sum = &mut self.buffer[(g * r + j) * len + l - self.first_row];
                *sum = value.mul_add(x[i], *sum);
            }
        }
    }

    /// A whole number of SIMD widths of columns `body`, of group `column_group`, for rows
    /// `i..i + T` of group `row_group`: both halves from one load of each element.
    fn body<const T: usize, const R: usize>(
        &mut self,
        rows: &[&[F]; T],
        i: usize,
        column_group: Option<usize>,
        row_group: Option<usize>,
        body: std::ops::Range<usize>,
    ) {
        let rhs: [&[F]; R] = std::array::from_fn(|j| self.rhs[j]);
        let acc_start = (i - self.first_row) * self.width;
        let len = self.m - self.first_row;
        let columns = body.start - self.first_row..body.end - self.first_row;
        match (column_group, row_group) {
            (Some(g), Some(h)) => {
                let coefficients: [[F; R]; T] =
                    std::array::from_fn(|t| std::array::from_fn(|j| rhs[j][i + t]));
                let mut outputs = self.buffer[h * R * len..(h + 1) * R * len].chunks_exact_mut(len);
                let buffers: [&mut [F]; R] = std::array::from_fn(|_| {
                    let output = outputs.next().expect("R outputs per group");
                    &mut output[columns.clone()]
                });
                let acc = &mut self.lanes[acc_start + g * R..];
                F::symmetric_tile(*rows, rhs, coefficients, body, acc, self.width, buffers);
            }
            (Some(g), None) => {
                let acc = &mut self.lanes[acc_start + g * R..];
                F::tile(*rows, rhs, body, acc, self.width);
            }
            (None, Some(h)) => {
                for (j, x) in rhs.iter().enumerate() {
                    let negated: [F; T] = std::array::from_fn(|t| -x[i + t]);
                    let pieces: [&[F]; T] = std::array::from_fn(|t| &rows[t][body.clone()]);
                    let offset = (h * R + j) * len;
                    let buffer = &mut self.buffer[offset + columns.start..offset + columns.end];
                    F::subtract_terms(buffer, pieces, negated);
                }
            }
            (None, None) => {}
        }
    }
}

impl<F: Real> SymmetricBand<'_, F> {
    /// [`SymmetricBand::body`] for 2 to [`WIDE_SYMMETRIC_MAX`] right-hand sides on AVX-512: the wide
    /// tiles, lanes along the columns, over the whole piece (its last columns masked).
    fn body_wide<const T: usize>(
        &mut self,
        rows: &[&[F]; T],
        i: usize,
        column_group: Option<usize>,
        row_group: Option<usize>,
        body: std::ops::Range<usize>,
    ) {
        let (Some(g), Some(h)) = (column_group, row_group) else {
            unreachable!("a wide symmetric pass has every column in a group")
        };
        let (r, len, stride) = (self.rhs.len(), self.m - self.first_row, self.width);
        let columns = body.start - self.first_row..body.end - self.first_row;
        let rhs = self.rhs;
        let sums = &mut self.scalars[(i - self.first_row) * stride + g * r..];
        let buffer = &mut self.buffer[h * r * len..(h + 1) * r * len];
        match r {
            2 => wide_block::<F, T, 2>(rows, i, rhs, body, sums, stride, buffer, columns),
            3 => wide_block::<F, T, 3>(rows, i, rhs, body, sums, stride, buffer, columns),
            4 => wide_block::<F, T, 4>(rows, i, rhs, body, sums, stride, buffer, columns),
            5 => wide_block::<F, T, 5>(rows, i, rhs, body, sums, stride, buffer, columns),
            6 => wide_block::<F, T, 6>(rows, i, rhs, body, sums, stride, buffer, columns),
            _ => unreachable!(
                "wide symmetric passes have 2 to {WIDE_SYMMETRIC_MAX} right-hand sides"
            ),
        }
    }
}

/// The `N` right-hand sides of [`SymmetricBand::body_wide`]: `buffer` holds the row
/// group's transposed outputs (`len` values each), `columns` the body's place in them.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn wide_block<F: Real, const T: usize, const N: usize>(
    rows: &[&[F]; T],
    i: usize,
    rhs: &[&[F]],
    body: std::ops::Range<usize>,
    sums: &mut [F],
    stride: usize,
    buffer: &mut [F],
    columns: std::ops::Range<usize>,
) {
    let len = buffer.len() / N;
    let rhs: [&[F]; N] = std::array::from_fn(|j| rhs[j]);
    let coefficients: [[F; N]; T] = std::array::from_fn(|t| std::array::from_fn(|j| rhs[j][i + t]));
    let mut outputs = buffer.chunks_exact_mut(len);
    let buffers: [&mut [F]; N] = std::array::from_fn(|_| {
        let output = outputs.next().expect("N outputs per block");
        &mut output[columns.clone()]
    });
    F::symmetric_wide_tile::<T, N>(*rows, rhs, coefficients, body, sums, stride, buffers);
}

/// `vectors[r]·x_s` for every vector and right-hand side, by the register tiles of the
/// passes (so in a fixed order): `out[s][r]`.
pub fn dot_products<F: Real>(
    pool: &rayon::ThreadPool,
    vectors: &[Vec<F>],
    rhs: &[&[F]],
) -> Vec<Vec<F>> {
    if vectors.is_empty() {
        return vec![Vec::new(); rhs.len()];
    }
    let columns = ColumnGroup::all::<F>(vectors[0].len());
    let by_group = products(
        pool,
        vectors.len(),
        |r| &vectors[r],
        rhs,
        &[columns],
        &mut Workspace::default(),
    );
    by_group.into_iter().next().unwrap_or_default()
}

/// `row(i)[g]·x_j[g]` for `i < n_rows`: `out[g][j][i]`.
fn products<'a, F: Real>(
    pool: &rayon::ThreadPool,
    n_rows: usize,
    row: impl Fn(usize) -> &'a [F] + Sync,
    rhs: &[&[F]],
    groups: &[ColumnGroup],
    workspace: &mut Workspace<F>,
) -> Vec<Vec<Vec<F>>> {
    if rhs.is_empty() || groups.is_empty() {
        return vec![Vec::new(); groups.len()];
    }
    if rhs.len() <= 2 {
        products_lanewise(pool, n_rows, row, rhs, groups)
    } else {
        products_packed(pool, n_rows, row, rhs, groups, workspace)
    }
}

/// Right-hand sides per packed block: three SIMD vectors, the most a 4-row tile keeps in
/// registers with its accumulators (all 16 of AVX2's).
const PACKED_VECTORS: usize = 3;
/// Rows per parallel task of a packed pass: a multiple of every tile's rows (4, 6, 8 and
/// 12), so that no row of a task is left to a one-row tile.
const PACKED_ROWS_PER_TASK: usize = 24;

/// `rhs` interleaved column by column, the `r` values of column `l` at `l·r..(l + 1)·r`,
/// then `vectors·WIDTH` zeros, so that a tile can load `vectors` whole SIMD vectors from
/// any column (the layout of [`Dots::packed_tile`] with stride `r`). Lanes past `r` then
/// hold the next column's values, whose sums are discarded: no padding per column, so
/// that the tile's loads from L2, which bound it, are only the values it needs
/// (a stage of 10 in `f64` ~1.1× faster than with 12 per column).
fn pack_columns<F: Real>(rhs: &[&[F]], vectors: usize, packed: &mut Vec<F>) {
    let (width, stride) = (vectors * F::WIDTH, rhs.len());
    debug_assert!(stride <= width);
    let n = rhs.first().map_or(0, |x| x.len());
    refill(packed, n * stride + width, F::zero());
    for (column, values) in packed.chunks_exact_mut(stride).take(n).enumerate() {
        for (value, x) in values.iter_mut().zip(rhs) {
            *value = x[column];
        }
    }
}

/// [`products`] for three or more right-hand sides: blocks of up to `3·WIDTH` of them,
/// packed column by column, and register tiles of 4 rows × 3 vectors, 6 × 2 or 6 × 1
/// ([`Dots::packed_tile`]) that broadcast each kernel element to every right-hand side of
/// the block; where AVX-512VL gives the same 256-bit code 32 registers, taller tiles
/// whose right-hand-side vectors, loaded once a column, feed more rows: 8 × 3, 12 × 2
/// (`f64`; 6 × 2 stayed faster in `f32`) and 12 × 1 (a stage-10 pass in `f64` ~1.25×
/// faster at m = 4,000; `examples/pass_speed`). A row streams from memory once per block (once in all for a stage of up to
/// 12 picks in `f64`, 24 in `f32`), where lane-wise tiles of 4 right-hand sides read it
/// once per 4: ~1.3× faster for a stage of 10 at m = 4,000. Output `(i, g, j)` is one
/// running sum over the columns of group `g` in ascending order, whatever the thread
/// count or the tile.
fn products_packed<'a, F: Real>(
    pool: &rayon::ThreadPool,
    n_rows: usize,
    row: impl Fn(usize) -> &'a [F] + Sync,
    rhs: &[&[F]],
    groups: &[ColumnGroup],
    workspace: &mut Workspace<F>,
) -> Vec<Vec<Vec<F>>> {
    let r = rhs.len();
    let width = groups.len() * r; // outputs per row, ordered (group, right-hand side)
    let block_size = PACKED_VECTORS * F::WIDTH;
    let Workspace {
        packed, packed_out, ..
    } = workspace;
    let n_blocks = r.div_ceil(block_size);
    if packed.len() < n_blocks {
        packed.resize_with(n_blocks, Vec::new);
    }
    // (first right-hand side, SIMD vectors, packed block)
    let blocks: Vec<(usize, usize, &[F])> = rhs
        .chunks(block_size)
        .zip(packed.iter_mut())
        .enumerate()
        .map(|(b, (block, buffer))| {
            let vectors = block.len().div_ceil(F::WIDTH);
            pack_columns(block, vectors, buffer);
            (b * block_size, vectors, &buffer[..])
        })
        .collect();
    refill(packed_out, n_rows * width, F::zero());
    let out = &mut packed_out[..];
    // With AVX-512's 32 registers, taller tiles: the same sums, since each output is one
    // running sum over its row whatever the tile's shape.
    let (tall, f64_lanes) = (has_avx512(), F::WIDTH == 4);
    pool.install(|| {
        out.par_chunks_mut(PACKED_ROWS_PER_TASK * width)
            .enumerate()
            .for_each(|(task, out_rows)| {
                let first_row = task * PACKED_ROWS_PER_TASK;
                let rows_here = out_rows.len() / width;
                for (first_rhs, vectors, packed) in &blocks {
                    let n_rhs = (r - first_rhs).min(block_size);
                    let block = PackedBlock {
                        packed,
                        first_rhs: *first_rhs,
                        n_rhs,
                        groups,
                        width,
                        r,
                    };
                    let row = |o: usize| row(first_row + o);
                    match (vectors, tall) {
                        (1, true) => block.rows::<12, 1>(rows_here, &row, out_rows),
                        (2, true) if f64_lanes => block.rows::<12, 2>(rows_here, &row, out_rows),
                        (3, true) => block.rows::<8, 3>(rows_here, &row, out_rows),
                        (1, _) => block.rows::<6, 1>(rows_here, &row, out_rows),
                        (2, _) => block.rows::<6, 2>(rows_here, &row, out_rows),
                        _ => block.rows::<4, 3>(rows_here, &row, out_rows),
                    }
                }
            });
    });
    by_column(out, n_rows, groups.len(), r)
}

/// One packed block of right-hand sides of [`products_packed`].
struct PackedBlock<'p, F> {
    /// `n_rhs` values per column ([`pack_columns`]).
    packed: &'p [F],
    first_rhs: usize,
    n_rhs: usize,
    groups: &'p [ColumnGroup],
    width: usize,
    r: usize,
}

impl<F: Real> PackedBlock<'_, F> {
    /// Rows `0..n` of a task, by tiles of `ROWS` (the last ones one by one), into
    /// `out[o·width + g·r + first_rhs + j]`.
    fn rows<'a, const ROWS: usize, const V: usize>(
        &self,
        n: usize,
        row: &impl Fn(usize) -> &'a [F],
        out: &mut [F],
    ) {
        let mut o = 0;
        while o + ROWS <= n {
            self.tile::<ROWS, V>(o, std::array::from_fn(|t| row(o + t)), out);
            o += ROWS;
        }
        for o in o..n {
            self.tile::<1, V>(o, [row(o)], out);
        }
    }

    fn tile<const ROWS: usize, const V: usize>(&self, o: usize, rows: [&[F]; ROWS], out: &mut [F]) {
        for (g, group) in self.groups.iter().enumerate() {
            let mut acc = [[F::zero_lanes(); V]; ROWS];
            let acc = acc.as_flattened_mut();
            for run in &group.whole {
                F::packed_tile::<ROWS, V>(rows, self.packed, self.n_rhs, run.clone(), acc);
            }
            for t in 0..ROWS {
                let lanes = acc[t * V..(t + 1) * V]
                    .iter()
                    .flat_map(|lanes| F::lane_slice(lanes).iter().copied());
                let start = (o + t) * self.width + g * self.r + self.first_rhs;
                for (target, value) in out[start..start + self.n_rhs].iter_mut().zip(lanes) {
                    *target = value;
                }
            }
        }
    }
}

/// [`products`] for one or two right-hand sides (narrow passes of small kernels, and dot
/// products with the deflation terms): lane-wise register tiles of 4 rows, each output's
/// lanes summed in a fixed order, then reduced pairwise, then its leftover columns.
fn products_lanewise<'a, F: Real>(
    pool: &rayon::ThreadPool,
    m: usize,
    row: impl Fn(usize) -> &'a [F] + Sync,
    rhs: &[&[F]],
    groups: &[ColumnGroup],
) -> Vec<Vec<Vec<F>>> {
    let r = rhs.len();
    let width = groups.len() * r; // outputs per row, ordered (group, right-hand side)
                                  // Row-major output (m × width) so that each task owns a contiguous slice.
    let mut out = vec![F::zero(); m * width];
    pool.install(|| {
        out.par_chunks_mut(ROWS_PER_TASK * width)
            .enumerate()
            .for_each(|(task, out_rows)| {
                let first_row = task * ROWS_PER_TASK;
                let rows_here = out_rows.len() / width;
                let row = |o: usize| row(first_row + o);
                let mut acc = vec![F::zero_lanes(); rows_here * width];
                let mut accumulate = |first: usize, rows: &[&[F]]| {
                    for (g, group) in groups.iter().enumerate() {
                        for run in &group.runs {
                            let acc = &mut acc[first * width + g * r..];
                            match *rows {
                                [a, b, c, d] => accumulate_rows([a, b, c, d], rhs, run, acc, width),
                                [a] => accumulate_rows([a], rhs, run, acc, width),
                                _ => unreachable!("tiles have 4 or 1 rows"),
                            }
                        }
                    }
                };
                let mut o = 0;
                while o + 4 <= rows_here {
                    let rows: [&[F]; 4] = std::array::from_fn(|t| row(o + t));
                    accumulate(o, &rows);
                    o += 4;
                }
                for o in o..rows_here {
                    accumulate(o, &[row(o)]);
                }
                // Lanes first, then the columns left over, in ascending order.
                for (o, (out_row, lanes)) in out_rows
                    .chunks_exact_mut(width)
                    .zip(acc.chunks_exact(width))
                    .enumerate()
                {
                    let kernel_row = row(o);
                    let outputs = out_row.iter_mut().zip(lanes);
                    let columns = groups.iter().flat_map(|g| rhs.iter().map(move |x| (g, x)));
                    for ((value, &lanes), (group, x)) in outputs.zip(columns) {
                        *value = F::reduce(lanes);
                        for &l in &group.rest {
                            *value = kernel_row[l].mul_add(x[l], *value);
                        }
                    }
                }
            });
    });
    by_column(&out, m, groups.len(), r)
}

/// Rows of a pass's outputs copied out at a time by [`by_column`]: a block (~40 KB with 20
/// outputs per row) stays in cache while it is read once per column.
const BY_COLUMN_ROWS: usize = 256;

/// The row-major outputs of a pass (`n_rows × (groups·r)`, ordered (group, right-hand
/// side)) as one vector per column, `out[g][j][i]`, copied by blocks of rows: reading each
/// whole column in turn strides through the whole buffer once per column, and at
/// m = 4,000 with 20 columns the buffer (~0.7 MB) no longer fits in L2.
fn by_column<F: Real>(out: &[F], n_rows: usize, groups: usize, r: usize) -> GroupedProducts<F> {
    let width = groups * r;
    let mut columns: GroupedProducts<F> = (0..groups)
        .map(|_| (0..r).map(|_| vec![F::zero(); n_rows]).collect())
        .collect();
    for first in (0..n_rows).step_by(BY_COLUMN_ROWS) {
        let rows = first..(first + BY_COLUMN_ROWS).min(n_rows);
        let block = &out[rows.start * width..rows.end * width];
        for (g, by_rhs) in columns.iter_mut().enumerate() {
            for (j, column) in by_rhs.iter_mut().enumerate() {
                let values = block.chunks_exact(width).map(|row| row[g * r + j]);
                for (target, value) in column[rows.clone()].iter_mut().zip(values) {
                    *target = value;
                }
            }
        }
    }
    columns
}

/// `acc[o·stride + j] += rows[o][run]·rhs[j][run]` for one or two right-hand sides.
fn accumulate_rows<F: Real, const ROWS: usize>(
    rows: [&[F]; ROWS],
    rhs: &[&[F]],
    run: &std::ops::Range<usize>,
    acc: &mut [F::Lanes],
    stride: usize,
) {
    match *rhs {
        [x] => F::tile(rows, [x], run.clone(), acc, stride),
        [x, y] => F::tile(rows, [x, y], run.clone(), acc, stride),
        _ => unreachable!("lane-wise passes take one or two right-hand sides"),
    }
}

/// Outputs per combination tile: with 2 SIMD vectors each, 10 accumulators.
const COMBINE_OUTPUTS: usize = 5;
/// Elements ahead of a combination tile whose cache line it prefetches in every term: the
/// tile reads one piece of each of its (often ~100) terms per step, too many streams for
/// the hardware prefetcher, and just after a pass over `K` the terms are out of cache (95
/// terms × 4,000 rows into 10 outputs, out of cache: 0.67 ms, against 1.7–2.0 ms without
/// the prefetch and 0.83–0.85 ms streaming 4 terms at a time; in-process medians).
const PREFETCH_AHEAD: usize = 256;

/// `pieces[s][l] −= Σ_r coefficients[s][r] · vectors[r][l]` for every output `s` (the
/// rows of a chunk: `vectors[r]` is that chunk of term `r`), one fused multiply-add per
/// term in the order of `r`, so every element is the same whatever the chunks. One or two
/// outputs stream 4 terms at a time through each output ([`Dots::subtract_terms`]); more
/// take register tiles of up to 5 outputs × 2 SIMD vectors ([`Dots::combine_tile`]), which
/// load each term's piece once for 5 outputs and keep the outputs in registers: 1.2–1.45×
/// faster with the terms in cache (95–190 terms × 4,000 rows into 10 or 20 outputs), though
/// no change shows in a whole fit at m = 4,000, where the terms come from memory.
pub(crate) fn combine_chunk<F: Real>(
    pieces: &mut [&mut [F]],
    vectors: &[&[F]],
    coefficients: &[&[F]],
) {
    if pieces.len() <= 2 {
        let mut r = 0;
        while r + 4 <= vectors.len() {
            let terms: [&[F]; 4] = std::array::from_fn(|q| vectors[r + q]);
            for (piece, c) in pieces.iter_mut().zip(coefficients) {
                let factors: [F; 4] = std::array::from_fn(|q| c[r + q]);
                F::subtract_terms(piece, terms, factors);
            }
            r += 4;
        }
        for (r, &vector) in vectors.iter().enumerate().skip(r) {
            for (piece, c) in pieces.iter_mut().zip(coefficients) {
                F::subtract_terms(piece, [vector], [c[r]]);
            }
        }
        return;
    }
    let n = pieces.first().map_or(0, |piece| piece.len());
    let mut at = 0;
    while at < n {
        let vectors_here = ((n - at) / F::WIDTH).min(2);
        for first in (0..pieces.len()).step_by(COMBINE_OUTPUTS) {
            let last = (first + COMBINE_OUTPUTS).min(pieces.len());
            let (outs, c) = (&mut pieces[first..last], &coefficients[first..last]);
            match (outs.len(), vectors_here) {
                (5, 2) => F::combine_tile::<5, 2>(outs, vectors, c, at),
                (4, 2) => F::combine_tile::<4, 2>(outs, vectors, c, at),
                (3, 2) => F::combine_tile::<3, 2>(outs, vectors, c, at),
                (2, 2) => F::combine_tile::<2, 2>(outs, vectors, c, at),
                (1, 2) => F::combine_tile::<1, 2>(outs, vectors, c, at),
                (5, 1) => F::combine_tile::<5, 1>(outs, vectors, c, at),
                (4, 1) => F::combine_tile::<4, 1>(outs, vectors, c, at),
                (3, 1) => F::combine_tile::<3, 1>(outs, vectors, c, at),
                (2, 1) => F::combine_tile::<2, 1>(outs, vectors, c, at),
                (1, 1) => F::combine_tile::<1, 1>(outs, vectors, c, at),
                _ => {
                    // Fewer rows than a SIMD vector: one element at a time.
                    for (out, c) in outs.iter_mut().zip(c) {
                        for l in at..n {
                            for (vector, &c) in vectors.iter().zip(c.iter()) {
                                out[l] = (-c).mul_add(vector[l], out[l]);
                            }
                        }
                    }
                }
            }
        }
        at = if vectors_here == 0 {
            n
        } else {
            at + vectors_here * F::WIDTH
        };
    }
}

/// Per-row statistics of the initial kernel in one pass: `(Σ_{j∈+} K_ij, Σ_{j∈−} K_ij,
/// Σ_j D_j K_ij²)`, which for a symmetric `K` are the column statistics.
pub(crate) fn column_statistics<F: Real>(
    pool: &rayon::ThreadPool,
    kernel: &[F],
    m: usize,
    positive: &[F],
    negative: &[F],
    weight: &[F],
) -> (Vec<F>, Vec<F>, Vec<F>) {
    let mut stats = vec![F::zero(); 3 * m];
    pool.install(|| {
        stats
            .par_chunks_mut(3 * ROWS_PER_TASK)
            .enumerate()
            .for_each(|(task, out_rows)| {
                // `d` as a lane-parallel dot product of the row with `D K_i` formed in
                // registers: one read of the row (a running sum would be one dependent
                // add per element; `D K_i` in a buffer, a second sweep).
                let row = |offset: usize| {
                    let i = task * ROWS_PER_TASK + offset;
                    &kernel[i * m..(i + 1) * m]
                };
                let done = out_rows.len() / 12 * 4;
                let mut fours = out_rows.chunks_exact_mut(12);
                for (four, out) in fours.by_ref().enumerate() {
                    let rows = std::array::from_fn(|t| row(4 * four + t));
                    let stats = F::row_statistics_4(rows, positive, negative, weight);
                    out.copy_from_slice(stats.as_flattened());
                }
                let rest = fours.into_remainder();
                for (offset, out) in rest.chunks_exact_mut(3).enumerate() {
                    let stats = F::row_statistics(row(done + offset), positive, negative, weight);
                    out.copy_from_slice(&stats);
                }
            });
    });
    let p = (0..m).map(|i| stats[3 * i]).collect();
    let n = (0..m).map(|i| stats[3 * i + 1]).collect();
    let d = (0..m).map(|i| stats[3 * i + 2]).collect();
    (p, n, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_products_are_the_sums_over_each_group_for_any_thread_count() {
        for &m in &[5usize, 37, 130] {
            let kernel = symmetric_kernel(m);
            let labels: Vec<bool> = (0..m).map(|i| (i / 9) % 3 == 0).collect();
            let groups = [
                ColumnGroup::of_class::<f64>(&labels, true),
                ColumnGroup::of_class::<f64>(&labels, false),
            ];
            let xs: Vec<Vec<f64>> = (0..6)
                .map(|j| (0..m).map(|i| ((i + 5 * j) % 7) as f64 - 3.0).collect())
                .collect();
            for r in 1..=6 {
                let rhs: Vec<&[f64]> = xs[..r].iter().map(Vec::as_slice).collect();
                let one = multiply_groups(
                    &pool(1),
                    &kernel,
                    m,
                    &rhs,
                    &groups,
                    &mut Workspace::default(),
                );
                let two = multiply_groups(
                    &pool(2),
                    &kernel,
                    m,
                    &rhs,
                    &groups,
                    &mut Workspace::default(),
                );
                assert_eq!(one, two, "thread count changed the result");
                for (g, class) in [true, false].into_iter().enumerate() {
                    for j in 0..r {
                        for i in 0..m {
                            let naive: f64 = (0..m)
                                .filter(|&l| labels[l] == class)
                                .map(|l| kernel[i * m + l] * xs[j][l])
                                .sum();
                            assert!((one[g][j][i] - naive).abs() <= 1e-9 * (1.0 + naive.abs()));
                        }
                    }
                }
            }
        }
    }

    fn symmetric_kernel(m: usize) -> Vec<f64> {
        (0..m * m)
            .map(|t| {
                let (i, l) = (t / m, t % m);
                ((i.min(l) * 7919 + i.max(l) * 31) % 97) as f64 / 97.0
            })
            .collect()
    }

    #[test]
    fn symmetric_passes_match_full_passes_for_any_bands_groups_and_threads() {
        // One workspace for all the two-thread passes below, as an engine keeps it: what a
        // pass leaves in its buffers must not reach the next one, of whatever shape.
        let mut workspace = Workspace::default();
        for &m in &[601usize, 1, 2, 5, 37, 130] {
            let kernel = symmetric_kernel(m);
            let labels: Vec<bool> = (0..m).map(|i| (i / 9) % 3 == 0 || i < m / 3).collect();
            let class_groups = vec![
                ColumnGroup::of_class::<f64>(&labels, true),
                ColumnGroup::of_class::<f64>(&labels, false),
            ];
            let xs: Vec<Vec<f64>> = (0..NARROW_SYMMETRIC_MAX)
                .map(|j| (0..m).map(|i| ((i + 5 * j) % 7) as f64 - 3.0).collect())
                .collect();
            // One class alone leaves columns (and rows) in no group.
            let one_class = vec![ColumnGroup::of_class::<f64>(&labels, false)];
            for groups in [vec![ColumnGroup::all::<f64>(m)], class_groups, one_class] {
                // Narrow tiles but on AVX-512, where 2 to 4 take the wide ones.
                for r in 1..=NARROW_SYMMETRIC_MAX {
                    let rhs: Vec<&[f64]> = xs[..r].iter().map(Vec::as_slice).collect();
                    assert_symmetric_matches_full(&kernel, m, &rhs, &groups, 1e-9, &mut workspace);
                }
            }
        }
    }

    /// `symmetric_products` of `rhs` with 1, 3 and 16 bands: the same on one thread and on
    /// two (the two-thread passes share `workspace`), and within `tolerance` of full rows.
    fn assert_symmetric_matches_full<F: Real>(
        kernel: &[F],
        m: usize,
        rhs: &[&[F]],
        groups: &[ColumnGroup],
        tolerance: f64,
        workspace: &mut Workspace<F>,
    ) {
        let r = rhs.len();
        let row = |i: usize| &kernel[i * m..(i + 1) * m];
        let full = products(&pool(1), m, row, rhs, groups, &mut Workspace::default());
        for bands in [1, 3, 16] {
            let one = symmetric_products(
                &pool(1),
                kernel,
                m,
                rhs,
                groups,
                bands,
                &mut Workspace::default(),
            );
            let two = symmetric_products(&pool(2), kernel, m, rhs, groups, bands, workspace);
            assert_eq!(one, two, "thread count changed the result (m={m}, r={r})");
            assert_eq!(one.concat().concat().len(), full.concat().concat().len());
            for (a, b) in one
                .iter()
                .flatten()
                .flatten()
                .zip(full.iter().flatten().flatten())
            {
                let (a, b) = (a.as_f64(), b.as_f64());
                assert!(
                    (a - b).abs() <= tolerance * (1.0 + b.abs()),
                    "{a} vs {b} (m={m}, r={r}, bands={bands})"
                );
            }
        }
    }

    fn check_wide_symmetric_passes<F: Real>(tolerance: f64) {
        let mut workspace = Workspace::default();
        for &m in &[601usize, 64, 65, 130, 257] {
            let kernel: Vec<F> = symmetric_kernel(m).into_iter().map(F::from_f64).collect();
            let contiguous: Vec<bool> = (0..m).map(|i| i < m / 3 + 1).collect();
            let interleaved: Vec<bool> = (0..m).map(|i| (i / 9) % 3 == 0 || i < m / 3).collect();
            let split = |labels: &[bool]| {
                vec![
                    ColumnGroup::of_class::<F>(labels, true),
                    ColumnGroup::of_class::<F>(labels, false),
                ]
            };
            let xs: Vec<Vec<F>> = (0..WIDE_SYMMETRIC_MAX)
                .map(|j| {
                    (0..m)
                        .map(|i| F::from_f64(((i * 3 + 5 * j) % 7) as f64 - 3.0))
                        .collect()
                })
                .collect();
            // One class alone leaves columns in no group: full rows, the same sums.
            let one_class = vec![ColumnGroup::of_class::<F>(&contiguous, false)];
            let all = vec![ColumnGroup::all::<F>(m)];
            for groups in [all, split(&contiguous), split(&interleaved), one_class] {
                // The wide tiles on AVX-512; elsewhere narrow ones (2 to 4) or full rows.
                for r in 2..=WIDE_SYMMETRIC_MAX {
                    let rhs: Vec<&[F]> = xs[..r].iter().map(Vec::as_slice).collect();
                    assert_symmetric_matches_full(
                        &kernel,
                        m,
                        &rhs,
                        &groups,
                        tolerance,
                        &mut workspace,
                    );
                }
            }
        }
    }

    #[test]
    fn overlapping_groups_give_each_group_its_own_sums() {
        let m = 130;
        let kernel = symmetric_kernel(m);
        let labels: Vec<bool> = (0..m).map(|i| i < 20).collect();
        let groups = [
            ColumnGroup::all::<f64>(m),
            ColumnGroup::of_class::<f64>(&labels, true),
        ];
        let xs: Vec<Vec<f64>> = (0..4)
            .map(|j| (0..m).map(|i| ((i + 3 * j) % 5) as f64 - 2.0).collect())
            .collect();
        for r in [1, 2, 3, 4] {
            let rhs: Vec<&[f64]> = xs[..r].iter().map(Vec::as_slice).collect();
            let mut workspace = Workspace::default();
            let pass = multiply_groups(&pool(2), &kernel, m, &rhs, &groups, &mut workspace);
            let full =
                multiply_groups_full_rows(&pool(2), &kernel, m, &rhs, &groups, &mut workspace);
            assert_eq!(pass, full, "r={r}");
        }
    }

    #[test]
    fn wide_symmetric_passes_match_full_passes_for_any_bands_groups_and_threads() {
        check_wide_symmetric_passes::<f64>(1e-9);
        check_wide_symmetric_passes::<f32>(1e-3);
    }

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
                let mut buffers: Vec<Vec<F>> =
                    (0..6).map(|j| vec![value(j); range.len()]).collect();
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
            assert_eq!(run(simd512::symmetric_wide_tile_f64::<1, 1>), portable);
        }
        // −0 lanes would sum to −0, and −0 + −0 stays −0: the masked lanes' +0s make it +0.
        assert_eq!(portable.0, 0.0f64.to_bits());
    }

    #[test]
    fn symmetric_wide_tiles_match_the_portable_tiles_bit_for_bit() {
        #[cfg(target_arch = "x86_64")]
        if has_avx512() {
            check_wide_symmetric_tiles::<f64, 8>(simd512::symmetric_wide_tile_f64::<4, 6>);
            check_wide_symmetric_tiles::<f32, 16>(simd512::symmetric_wide_tile_f32::<4, 6>);
            return;
        }
        eprintln!("no AVX-512 here: the wide symmetric tiles' SIMD code is not tested");
    }

    #[test]
    fn symmetric_f32_passes_match_full_passes() {
        let m = 301;
        let kernel: Vec<f32> = symmetric_kernel(m).into_iter().map(|v| v as f32).collect();
        let x: Vec<f32> = (0..m).map(|i| (i % 7) as f32 - 3.0).collect();
        let groups = [ColumnGroup::all::<f32>(m)];
        let row = |i: usize| &kernel[i * m..(i + 1) * m];
        let full = products(&pool(1), m, row, &[&x], &groups, &mut Workspace::default());
        let triangle = symmetric_products(
            &pool(2),
            &kernel,
            m,
            &[&x],
            &groups,
            5,
            &mut Workspace::default(),
        );
        for (a, b) in triangle[0][0].iter().zip(&full[0][0]) {
            assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()), "{a} vs {b}");
        }
    }

    #[test]
    fn dot_products_match_naive_dots() {
        let vectors: Vec<Vec<f32>> = (0..9)
            .map(|r| (0..45).map(|i| ((i * r) % 5) as f32 - 2.0).collect())
            .collect();
        let x: Vec<f32> = (0..45).map(|i| (i % 3) as f32).collect();
        let out = dot_products(&pool(2), &vectors, &[&x]);
        for (r, v) in vectors.iter().enumerate() {
            let naive: f32 = v.iter().zip(&x).map(|(a, b)| a * b).sum();
            assert_eq!(out[0][r], naive);
        }
    }

    /// Output `(i, g, j)` of a wide pass is the running fused sum over the columns of
    /// group `g` in ascending order: exactly this fold, whatever the block, tile or threads.
    fn ordered_sum<F: Real>(row: &[F], x: &[F], keep: impl Fn(usize) -> bool) -> F {
        (0..row.len())
            .filter(|&l| keep(l))
            .fold(F::zero(), |sum, l| row[l].mul_add(x[l], sum))
    }

    fn check_wide_passes<F: Real>(widths: &[usize]) {
        // The packed tiles of passes reading full rows (`multiply_groups` reads the upper
        // triangle for up to 4 right-hand sides, 6 on AVX-512). The two-thread passes share one workspace, largest first: nothing a pass leaves
        // in its buffers may reach the next.
        let mut workspace = Workspace::default();
        for &m in &[130usize, 1, 5, 37] {
            let kernel: Vec<F> = symmetric_kernel(m).into_iter().map(F::from_f64).collect();
            let labels: Vec<bool> = (0..m).map(|i| (i / 9) % 3 == 0 || i < m / 3).collect();
            let group_sets = [
                vec![ColumnGroup::all::<F>(m)],
                vec![
                    ColumnGroup::of_class::<F>(&labels, true),
                    ColumnGroup::of_class::<F>(&labels, false),
                ],
                vec![ColumnGroup::of_class::<F>(&labels, false)],
            ];
            let xs: Vec<Vec<F>> = (0..widths.iter().copied().max().unwrap_or(0))
                .map(|j| {
                    (0..m)
                        .map(|i| F::from_f64(((i * 3 + 5 * j) % 11) as f64 / 7.0 - 0.7))
                        .collect()
                })
                .collect();
            for groups in &group_sets {
                for &r in widths {
                    let rhs: Vec<&[F]> = xs[..r].iter().map(Vec::as_slice).collect();
                    let one = multiply_groups_full_rows(
                        &pool(1),
                        &kernel,
                        m,
                        &rhs,
                        groups,
                        &mut Workspace::default(),
                    );
                    let two = multiply_groups_full_rows(
                        &pool(2),
                        &kernel,
                        m,
                        &rhs,
                        groups,
                        &mut workspace,
                    );
                    assert_eq!(one, two, "thread count changed the result");
                    for (g, group) in groups.iter().enumerate() {
                        let in_group = |l: usize| group.whole.iter().any(|run| run.contains(&l));
                        for (j, x) in xs[..r].iter().enumerate() {
                            for i in 0..m {
                                let row = &kernel[i * m..(i + 1) * m];
                                let expected = ordered_sum(row, x, in_group);
                                assert_eq!(one[g][j][i], expected, "m={m} r={r} g={g} j={j} i={i}");
                            }
                        }
                    }
                }
            }
        }
    }

    fn check_passes_in_order<F: Real>() {
        let mut workspace = Workspace::default();
        for &m in &[130usize, 1, 5, 37] {
            let kernel: Vec<F> = symmetric_kernel(m).into_iter().map(F::from_f64).collect();
            let xs: Vec<Vec<F>> = (0..30)
                .map(|j| {
                    (0..m)
                        .map(|i| F::from_f64(((i * 3 + 5 * j) % 11) as f64 / 7.0 - 0.7))
                        .collect()
                })
                .collect();
            for r in [1, 2, 3, 5, 12, 13, 30] {
                let rhs: Vec<&[F]> = xs[..r].iter().map(Vec::as_slice).collect();
                let one = multiply_in_order(&pool(1), &kernel, m, &rhs, &mut Workspace::default());
                let two = multiply_in_order(&pool(2), &kernel, m, &rhs, &mut workspace);
                assert_eq!(one, two, "thread count changed the result");
                for (j, x) in xs[..r].iter().enumerate() {
                    for i in 0..m {
                        let expected = ordered_sum(&kernel[i * m..(i + 1) * m], x, |_| true);
                        assert_eq!(one[j][i], expected, "m={m} r={r} j={j} i={i}");
                    }
                }
            }
        }
    }

    #[test]
    fn passes_in_order_are_the_ordered_sums_for_any_width_and_thread_count() {
        check_passes_in_order::<f64>();
        check_passes_in_order::<f32>();
    }

    fn check_products_at_rows<F: Real>(widths: &[usize]) {
        let m = 130;
        let kernel: Vec<F> = symmetric_kernel(m).into_iter().map(F::from_f64).collect();
        let labels: Vec<bool> = (0..m).map(|i| i < 57).collect();
        let groups = [
            ColumnGroup::of_class::<F>(&labels, true),
            ColumnGroup::of_class::<F>(&labels, false),
        ];
        let vectors = |count: usize, seed: usize| -> Vec<Vec<F>> {
            (0..count)
                .map(|j| {
                    (0..m)
                        .map(|i| F::from_f64(((i * 3 + 5 * j + seed) % 11) as f64 / 7.0 - 0.7))
                        .collect()
                })
                .collect()
        };
        let widest = widths.iter().copied().max().unwrap_or(0);
        let (xs, extra) = (vectors(widest, 0), vectors(3, 4));
        let picks = [77, 3, 129, 40, 41, 0, 100];
        for &r in widths {
            let rhs: Vec<&[F]> = xs[..r].iter().map(Vec::as_slice).collect();
            let mut workspace = Workspace::default();
            // The pass reading full rows, as `multiply_groups_with_rows` does for any width
            // without AVX-512 and beyond the wide symmetric passes' widths with it.
            let row = |i: usize| &kernel[i * m..(i + 1) * m];
            let (whole, whole_extra) =
                products_and_extra_rows(&pool(2), m, row, &extra, &rhs, &groups, &mut workspace);
            let (at_picks, at_extra) = multiply_groups_at_rows(
                &pool(2),
                &kernel,
                m,
                &picks,
                &extra,
                &rhs,
                &groups,
                &mut workspace,
            );
            assert_eq!(at_extra, whole_extra, "r={r}");
            for (g, by_rhs) in at_picks.iter().enumerate() {
                for (j, out) in by_rhs.iter().enumerate() {
                    let expected: Vec<F> = picks.iter().map(|&i| whole[g][j][i]).collect();
                    assert_eq!(out, &expected, "r={r} g={g} j={j}");
                }
            }
        }
    }

    #[test]
    fn products_at_rows_are_the_pass_rows_bit_for_bit() {
        // Every packed tile shape: 4 × 3, 6 × 2 and 6 × 1 vectors, one block or several.
        check_products_at_rows::<f64>(&[3, 5, 10, 13]);
        check_products_at_rows::<f32>(&[3, 9, 10, 17, 30]);
    }

    #[test]
    fn wide_passes_are_the_ordered_sums_for_any_block_group_and_thread_count() {
        // One, two and three SIMD vectors per block, several blocks, a partial last one.
        check_wide_passes::<f64>(&[3, 4, 5, 8, 9, 12, 13, 27]);
        check_wide_passes::<f32>(&[3, 8, 9, 16, 17, 24, 25, 50]);
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
    fn combinations_are_the_ordered_fused_sums_for_any_number_of_outputs() {
        // Each element must be `out − c_0 v_0 − c_1 v_1 − …`, one rounding per term in
        // that order, whichever tile (or none) covers it: the engine's results may not
        // depend on how many outputs a combination has or where a chunk starts.
        fn check<F: Real>() {
            let value = |a: usize, b: usize| F::from_f64(((a * 7 + b * 5) % 23) as f64 / 7.0 - 1.5);
            for n in [0usize, 1, 3, 4, 7, 8, 9, 16, 17, 37] {
                for outputs in 1..=12 {
                    for terms in [0usize, 1, 3, 5, 13] {
                        let vectors: Vec<Vec<F>> = (0..terms)
                            .map(|r| (0..n).map(|l| value(r, l)).collect())
                            .collect();
                        let coefficients: Vec<Vec<F>> = (0..outputs)
                            .map(|s| (0..terms).map(|r| value(s + 11, r + 3)).collect())
                            .collect();
                        let init: Vec<Vec<F>> = (0..outputs)
                            .map(|s| (0..n).map(|l| value(s + 2, l + 1)).collect())
                            .collect();
                        let mut expected = init.clone();
                        for (out, c) in expected.iter_mut().zip(&coefficients) {
                            for (l, value) in out.iter_mut().enumerate() {
                                for (vector, &c) in vectors.iter().zip(c) {
                                    *value = (-c).mul_add(vector[l], *value);
                                }
                            }
                        }
                        let mut outs = init.clone();
                        let mut pieces: Vec<&mut [F]> =
                            outs.iter_mut().map(Vec::as_mut_slice).collect();
                        let terms_here: Vec<&[F]> = vectors.iter().map(Vec::as_slice).collect();
                        let c: Vec<&[F]> = coefficients.iter().map(Vec::as_slice).collect();
                        combine_chunk(&mut pieces, &terms_here, &c);
                        assert!(
                            outs == expected,
                            "n = {n}, {outputs} outputs, {terms} terms"
                        );
                    }
                }
            }
        }
        check::<f64>();
        check::<f32>();
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

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    #[test]
    fn multiply_matches_naive_for_odd_sizes_and_any_thread_count() {
        for &m in &[1usize, 3, 19, 67] {
            let kernel = symmetric_kernel(m);
            let xs: Vec<Vec<f64>> = (0..7)
                .map(|j| (0..m).map(|i| ((i + 3 * j) % 11) as f64 - 5.0).collect())
                .collect();
            for r in 1..=7 {
                let rhs: Vec<&[f64]> = xs[..r].iter().map(|x| x.as_slice()).collect();
                let one = multiply(&pool(1), &kernel, m, &rhs, &mut Workspace::default());
                let two = multiply(&pool(2), &kernel, m, &rhs, &mut Workspace::default());
                assert_eq!(one, two, "thread count changed the result");
                for j in 0..r {
                    for i in 0..m {
                        let naive: f64 = (0..m).map(|l| kernel[i * m + l] * xs[j][l]).sum();
                        assert!((one[j][i] - naive).abs() <= 1e-9 * (1.0 + naive.abs()));
                    }
                }
            }
        }
    }
}
