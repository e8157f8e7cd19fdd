//! One read of the kernel for many right-hand sides: `out_j = K x_j`.
//!
//! Hand-written rather than a BLAS/faer GEMM for two reasons: every output element is a
//! dot product summed in one fixed order whatever the number of threads (rows are split
//! between threads, never the reduction), so the selection does not depend on
//! `n_threads`; and all right-hand sides of a pick or a stage share one streaming read
//! of `K`, which is the cost floor of the greedy loop (docs/architecture.md, "Choosing a
//! pass"). A BLAS `dsymv`, which also reads one triangle, would neither fix the order of
//! the sums nor split by class. Passes with up to 4 right-hand sides read only the upper
//! triangle of the symmetric `K` (`symmetric_products`), and so do those with 5 and 6 on a
//! CPU with AVX-512 (where 2 to 6 take the wide tiles, lanes along the columns); wider
//! ones, bound by arithmetic, read whole rows, each row once for up to 12 (`f64`) or 24
//! (`f32`) right-hand sides (`products_packed`). Every tuning constant is in `tuning`.
//!
//! The plan of a pass: `reads_triangle` says whether it reads the upper triangle
//! (`symmetric`, narrow and wide symmetric tiles) or full rows (`full_rows`: lane-wise
//! tiles for one or two right-hand sides, packed tiles for more); `groups` holds the
//! column groups a pass splits by; `combine` the combinations of deflation terms.

mod combine;
mod full_rows;
mod groups;
mod symmetric;
#[cfg(test)]
mod tests;

pub(crate) use combine::combine_chunk;
pub(crate) use full_rows::{class_statistics, column_statistics};
use full_rows::{products, products_packed};
pub use groups::ColumnGroup;
use symmetric::symmetric_products;

use crate::real::Real;
use crate::simd::has_avx512;
use crate::tuning::{
    NARROW_SYMMETRIC_MAX, SYMMETRIC_BANDS, SYMMETRIC_MIN_ORDER, WIDE_SYMMETRIC_MAX,
};

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

pub(super) struct BandBuffers<F: Real> {
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
/// ([`crate::selection::select_many`]) so get the same products whichever others share them.
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
/// that call where it reads full rows: see `reads_triangle`), bit for bit: a row's sums
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
