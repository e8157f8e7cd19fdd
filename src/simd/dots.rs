//! The `Dots` catalogue: every per-type SIMD kernel of the passes, dispatched at run time
//! to the AVX-512, AVX2 or portable body ([`super::simd_level`]).

use super::portable::*;
#[cfg(target_arch = "x86_64")]
use super::{avx2 as simd, avx512 as simd512};
use super::{enter_portable, has_avx512, has_fma};

/// Dot products of `row` with up to four vectors at once, in a fixed summation order
/// (eight partial sums, reduced pairwise, then the tail).
///
/// On x86-64 with AVX2 and FMA (checked at run time) explicit SIMD code does the same
/// sums with fused multiply-adds; a given machine always takes the same path, so results
/// never depend on the thread count.
#[inline]
pub fn dots<F: Dots, const R: usize>(row: &[F], rhs: [&[F]; R]) -> [F; R] {
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
    /// A tile of a combination of many outputs (the passes' `combine_chunk`): `outs[o][at + i] −=
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
                enter_portable();
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
                enter_portable();
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
                enter_portable();
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
                enter_portable();
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
                enter_portable();
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
                enter_portable();
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
                enter_portable();
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
                enter_portable();
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
