//! Passes that read whole rows of the kernel: lane-wise tiles for one or two right-hand
//! sides, packed tiles (the right-hand sides interleaved column by column) for more;
//! and the set-up pass of the per-column statistics.

use super::{refill, ColumnGroup, GroupedProducts, Workspace};
use crate::real::Real;
use crate::simd::has_avx512;
use crate::tuning::{BY_COLUMN_ROWS, PACKED_ROWS_PER_TASK, PACKED_VECTORS, ROWS_PER_TASK};
use rayon::prelude::*;

/// `row(i)[g]·x_j[g]` for `i < n_rows`: `out[g][j][i]`.
pub(super) fn products<'a, F: Real>(
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

/// `rhs` interleaved column by column, the `r` values of column `l` at `l·r..(l + 1)·r`,
/// then `vectors·WIDTH` zeros, so that a tile can load `vectors` whole SIMD vectors from
/// any column (the layout of [`crate::simd::Dots::packed_tile`] with stride `r`). Lanes past `r` then
/// hold the next column's values, whose sums are discarded: no padding per column, so
/// that the tile's loads from L2, which bound it, are only the values it needs
/// (a stage of 10 in `f64` ~1.1× faster than with 12 per column).
pub(super) fn pack_columns<F: Real>(rhs: &[&[F]], vectors: usize, packed: &mut Vec<F>) {
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
/// ([`crate::simd::Dots::packed_tile`]) that broadcast each kernel element to every right-hand side of
/// the block; where AVX-512VL gives the same 256-bit code 32 registers, taller tiles
/// whose right-hand-side vectors, loaded once a column, feed more rows: 8 × 3, 12 × 2
/// (`f64`; 6 × 2 stayed faster in `f32`) and 12 × 1 (a stage-10 pass in `f64` ~1.25×
/// faster at m = 4,000; `examples/pass_speed`). A row streams from memory once per block (once in all for a stage of up to
/// 12 picks in `f64`, 24 in `f32`), where lane-wise tiles of 4 right-hand sides read it
/// once per 4: ~1.3× faster for a stage of 10 at m = 4,000. Output `(i, g, j)` is one
/// running sum over the columns of group `g` in ascending order, whatever the thread
/// count or the tile.
pub(super) fn products_packed<'a, F: Real>(
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
pub(super) struct PackedBlock<'p, F> {
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
pub(super) fn products_lanewise<'a, F: Real>(
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

/// The row-major outputs of a pass (`n_rows × (groups·r)`, ordered (group, right-hand
/// side)) as one vector per column, `out[g][j][i]`, copied by blocks of rows: reading each
/// whole column in turn strides through the whole buffer once per column, and at
/// m = 4,000 with 20 columns the buffer (~0.7 MB) no longer fits in L2.
pub(super) fn by_column<F: Real>(
    out: &[F],
    n_rows: usize,
    groups: usize,
    r: usize,
) -> GroupedProducts<F> {
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
pub(super) fn accumulate_rows<F: Real, const ROWS: usize>(
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

/// The class sums and `d` of the initial kernel in one pass, for classes that form few
/// runs of columns (`groups`, one per class): each row's sum and sum of squares over each
/// run, from one read of the run, `(s_c[i], d_i = Σ_c w_c Σ_{j∈c} K_ij²)`, which for a
/// symmetric `K` are the column statistics.
pub(crate) fn class_statistics<F: Real>(
    pool: &rayon::ThreadPool,
    kernel: &[F],
    m: usize,
    groups: &[ColumnGroup],
    class_weights: &[F],
) -> (Vec<Vec<F>>, Vec<F>) {
    let n_classes = groups.len();
    let width = n_classes + 1; // per row: the class sums, then `d`
    let ones = vec![F::one(); m];
    let mut stats = vec![F::zero(); width * m];
    pool.install(|| {
        stats
            .par_chunks_mut(width * ROWS_PER_TASK)
            .enumerate()
            .for_each(|(task, out_rows)| {
                for (offset, out) in out_rows.chunks_exact_mut(width).enumerate() {
                    let i = task * ROWS_PER_TASK + offset;
                    let row = &kernel[i * m..(i + 1) * m];
                    let mut d = F::zero();
                    for ((sum, group), &w) in out.iter_mut().zip(groups).zip(class_weights) {
                        let mut squares = F::zero();
                        for run in &group.whole {
                            let piece = &row[run.clone()];
                            let [s, q] = crate::simd::dots(piece, [&ones[run.clone()], piece]);
                            *sum += s;
                            squares += q;
                        }
                        d += w * squares;
                    }
                    out[n_classes] = d;
                }
            });
    });
    let sums = (0..n_classes)
        .map(|c| (0..m).map(|i| stats[width * i + c]).collect())
        .collect();
    let d = (0..m).map(|i| stats[width * i + n_classes]).collect();
    (sums, d)
}
