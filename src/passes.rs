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

use crate::real::Real;
use crate::simd::{has_avx512, has_fma};
use crate::tuning::{
    BY_COLUMN_ROWS, COMBINE_OUTPUTS, NARROW_SYMMETRIC_MAX, PACKED_ROWS_PER_TASK, PACKED_VECTORS,
    ROWS_PER_TASK, SYMMETRIC_BANDS, SYMMETRIC_MIN_ORDER, WIDE_SYMMETRIC_MAX,
};
use rayon::prelude::*;

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

/// `rhs` interleaved column by column, the `r` values of column `l` at `l·r..(l + 1)·r`,
/// then `vectors·WIDTH` zeros, so that a tile can load `vectors` whole SIMD vectors from
/// any column (the layout of [`crate::simd::Dots::packed_tile`] with stride `r`). Lanes past `r` then
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
/// ([`crate::simd::Dots::packed_tile`]) that broadcast each kernel element to every right-hand side of
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

/// `pieces[s][l] −= Σ_r coefficients[s][r] · vectors[r][l]` for every output `s` (the
/// rows of a chunk: `vectors[r]` is that chunk of term `r`), one fused multiply-add per
/// term in the order of `r`, so every element is the same whatever the chunks. One or two
/// outputs stream 4 terms at a time through each output ([`crate::simd::Dots::subtract_terms`]); more
/// take register tiles of up to 5 outputs × 2 SIMD vectors ([`crate::simd::Dots::combine_tile`]), which
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
