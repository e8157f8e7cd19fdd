//! The portable bodies of the [`super::Dots`] kernels: every CPU, and the reference
//! that the SIMD bodies match bit for bit (the same products in the same order).

use crate::tuning::LANES;
use num_traits::Float;
use std::ops::AddAssign;

pub(crate) fn reduce_lanes<F: Float + AddAssign, const N: usize>(mut lanes: [F; N]) -> F {
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
pub(crate) fn with_tail<F: Float + AddAssign>(
    lanes: [F; LANES],
    row: &[F],
    body: usize,
    x: impl Fn(usize) -> F,
) -> F {
    let mut sum = reduce_lanes(lanes);
    for (l, &value) in row.iter().enumerate().skip(body) {
        sum = value.mul_add(x(l), sum);
    }
    sum
}

/// The tile of [`Dots::tile`] with `W` lanes per output (the SIMD width of `F`).
pub(crate) fn portable_tile<
    F: Float + AddAssign,
    const ROWS: usize,
    const R: usize,
    const W: usize,
>(
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
pub(crate) fn portable_packed_tile<
    F: Float + AddAssign,
    const ROWS: usize,
    const V: usize,
    const W: usize,
>(
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
pub(crate) fn portable_symmetric_tile<
    F: Float + AddAssign,
    const ROWS: usize,
    const R: usize,
    const W: usize,
>(
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
pub(crate) fn portable_symmetric_wide_tile<
    F: Float + AddAssign,
    const ROWS: usize,
    const N: usize,
    const W: usize,
>(
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

pub(crate) fn portable_subtract_terms<F: Float + AddAssign, const R: usize>(
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
pub(crate) fn portable_combine_tile<
    F: Float + AddAssign,
    const O: usize,
    const V: usize,
    const W: usize,
>(
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
pub(crate) fn portable_row_statistics<F: Float + AddAssign>(
    row: &[F],
    positive: &[F],
    negative: &[F],
    weight: &[F],
) -> [F; 3] {
    let weighted: Vec<F> = row.iter().zip(weight).map(|(&r, &w)| w * r).collect();
    portable_dots(row, [positive, negative, &weighted])
}

pub(crate) fn portable_dots<F: Float + AddAssign, const R: usize>(
    row: &[F],
    rhs: [&[F]; R],
) -> [F; R] {
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
