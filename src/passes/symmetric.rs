//! Passes that read only the upper triangle of the symmetric kernel: each row's dot
//! products with the right-hand sides and, from the same load, its transposed
//! multiply-adds into a per-band buffer, by bands fixed by `m` alone.

use super::{multiply_groups_full_rows, refill, BandBuffers, ColumnGroup, Workspace};
use crate::real::Real;
use crate::simd::{has_avx512, has_fma};
use crate::tuning::{NARROW_SYMMETRIC_MAX, WIDE_SYMMETRIC_MAX};
use rayon::prelude::*;

/// The first row of each band, the bands' upper triangles of about equal size.
pub(super) fn band_starts(m: usize, bands: usize) -> Vec<usize> {
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
/// band), both from one load of the element ([`crate::simd::Dots::symmetric_tile`]). The
/// same multiply-adds as a full pass from half the bytes: for the one or two right-hand
/// sides of a stage-1 pick, whose pass is bound by memory, ~1.5× faster at m = 4,000;
/// without AVX-512, up to [`NARROW_SYMMETRIC_MAX`] take these narrow tiles.
/// With 2 to 6 right-hand sides on AVX-512 the wide tiles ([`crate::simd::Dots::symmetric_wide_tile`])
/// take the same two halves, lanes along the columns; wider passes (a stage of 10) stay
/// with full rows, where the transposed update's loads and stores of the buffers, once
/// per 4 rows and right-hand side, made the triangle slower than the register tiles of
/// a full pass.
///
/// Output `i` sums, in this order: its row's lanes, the row's leftover columns and its
/// diagonal block, then the buffers of the bands at or before it, in band order. The bands
/// depend on `m` alone, so the result does not depend on the number of threads.
pub(super) fn symmetric_products<F: Real>(
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
    // A band's transposed updates go only to the groups of its rows: its buffer holds
    // those (`slots[b][g]`, in group order), so that classes in runs (a band's rows are of
    // one class or two) do not zero and sum a buffer per group for every band.
    let slots: Vec<Vec<Option<usize>>> = band_rows
        .iter()
        .map(|rows| {
            // The groups of the runs of columns (so of rows) that meet the band's rows.
            let mut present = vec![false; groups.len()];
            let first = segments.partition_point(|(run, _)| run.end <= rows.start);
            segments[first..]
                .iter()
                .take_while(|(run, _)| run.start < rows.end)
                .filter_map(|&(_, g)| g)
                .for_each(|g| present[g] = true);
            let mut next = 0;
            present
                .iter()
                .map(|&here| {
                    here.then(|| {
                        next += 1;
                        next - 1
                    })
                })
                .collect()
        })
        .collect();
    let band = |((rows, slot_of), buffers): BandJob<'_, F>| {
        let held = slot_of.iter().flatten().count() * r;
        refill(&mut buffers.lanes, rows.len() * width, F::zero_lanes());
        refill(&mut buffers.scalars, rows.len() * width, F::zero());
        refill(&mut buffers.buffer, held * (m - rows.start), F::zero());
        let mut band = SymmetricBand {
            kernel,
            m,
            rhs,
            group_of: &group_of,
            slot_of,
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
            .zip(slots.par_iter())
            .zip(buffers.par_iter_mut())
            .map(band)
            .collect()
    });
    // Each output on its own thread (a wide pass's bands hold ~20 outputs of up to `m`
    // values each), summed in band order whatever the thread count; a band without the
    // output's group has only zeros to add, and is passed over.
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
                let (g, j) = (w / r, w % r);
                for ((rows, slot_of), buffers) in band_rows.iter().zip(&slots).zip(bands_done) {
                    let Some(slot) = slot_of[g] else {
                        continue;
                    };
                    let len = m - rows.start;
                    let at = slot * r + j;
                    let added = &buffers.buffer[at * len..(at + 1) * len];
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

/// A band's rows, its groups' slots in its buffer, and its buffers.
type BandJob<'b, F> = (
    (&'b std::ops::Range<usize>, &'b Vec<Option<usize>>),
    &'b mut BandBuffers<F>,
);

/// The state of one band of rows of a symmetric pass.
pub(super) struct SymmetricBand<'a, F: Real> {
    kernel: &'a [F],
    m: usize,
    rhs: &'a [&'a [F]],
    group_of: &'a [Option<usize>],
    /// Per group, its place in `buffer` when a row of the band is of that group.
    slot_of: &'a [Option<usize>],
    segments: &'a [(std::ops::Range<usize>, Option<usize>)],
    width: usize,
    /// Two or more right-hand sides on AVX-512: the wide tiles
    /// ([`crate::simd::Dots::symmetric_wide_tile`]).
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
        // The transposed updates go to the row group's slot of the band's buffer.
        let row_slot = self.group_of[i].and_then(|h| self.slot_of[h]);
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
                    self.body_wide::<T>(&rows, i, column_group, row_slot, body.clone())
                }
                1 => self.body::<T, 1>(&rows, i, column_group, row_slot, body.clone()),
                2 => self.body::<T, 2>(&rows, i, column_group, row_slot, body.clone()),
                3 => self.body::<T, 3>(&rows, i, column_group, row_slot, body.clone()),
                4 => self.body::<T, 4>(&rows, i, column_group, row_slot, body.clone()),
                _ => {
                    unreachable!("narrow passes have 1 to {NARROW_SYMMETRIC_MAX} right-hand sides")
                }
            }
            // The columns left over, one by one.
            for (t, row) in rows.iter().enumerate() {
                for l in body.end..piece.end {
                    self.scalar_element(i + t, l, row[l], row_slot);
                }
            }
        }
        // The block on the diagonal last: its cache lines are the rows' first, fetched by
        // the stream of the body (when they share a line with it) and not waited for alone.
        for (t, row) in rows.iter().enumerate() {
            self.scalar_element(i + t, i + t, row[i + t], None); // counted once
            for l in i + t + 1..right {
                self.scalar_element(i + t, l, row[l], row_slot);
            }
        }
    }

    /// Element `K[i,l]`, `l ≥ i`, one by one: `K[i,l]·x[l]` into output `i` of the column's
    /// group and, when `row_slot` is given, `K[i,l]·x[i]` into output `l` of the buffer's
    /// slot `row_slot` (the row's group).
    #[inline(always)]
    fn scalar_element(&mut self, i: usize, l: usize, value: F, row_slot: Option<usize>) {
        let (r, len) = (self.rhs.len(), self.m - self.first_row);
        for (j, x) in self.rhs.iter().enumerate() {
            if let Some(g) = self.group_of[l] {
                let sum = &mut self.scalars[(i - self.first_row) * self.width + g * r + j];
                *sum = value.mul_add(x[l], *sum);
            }
            if let Some(g) = row_slot {
                let sum = &mut self.buffer[(g * r + j) * len + l - self.first_row];
                *sum = value.mul_add(x[i], *sum);
            }
        }
    }

    /// A whole number of SIMD widths of columns `body`, of group `column_group`, for rows
    /// `i..i + T` whose group has slot `row_slot` of the buffer: both halves from one load of
    /// each element.
    fn body<const T: usize, const R: usize>(
        &mut self,
        rows: &[&[F]; T],
        i: usize,
        column_group: Option<usize>,
        row_slot: Option<usize>,
        body: std::ops::Range<usize>,
    ) {
        let rhs: [&[F]; R] = std::array::from_fn(|j| self.rhs[j]);
        let acc_start = (i - self.first_row) * self.width;
        let len = self.m - self.first_row;
        let columns = body.start - self.first_row..body.end - self.first_row;
        match (column_group, row_slot) {
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
        row_slot: Option<usize>,
        body: std::ops::Range<usize>,
    ) {
        let (Some(g), Some(h)) = (column_group, row_slot) else {
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
pub(super) fn wide_block<F: Real, const T: usize, const N: usize>(
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
