//! Every tuning constant of the engine, with the measurement (or the reason) behind it.
//!
//! None of them changes a selection: sums are fixed by the data and by the SIMD level
//! alone (bands and tiles never split a reduction between threads), so these only trade
//! speed. Figures are medians at m = 4,000 on a 2-core AVX-512 machine unless they say
//! otherwise; `examples/pass_speed` times one pass, `examples/profile_greedy` a fit.

// --- SIMD kernels (src/simd) ---

/// Independent accumulators of a loop the compiler vectorises: the partial sums of the
/// portable and AVX2 dot products, the running maxima of a precomputed kernel's checks
/// (`checks.rs`). Each stays in a SIMD lane, where one accumulator would be a chain of
/// dependent instructions (no measurement recorded).
pub(crate) const LANES: usize = 8;
/// Elements ahead of a combination tile whose cache line it prefetches in every term: the
/// tile reads one piece of each of its (often ~100) terms per step, too many streams for
/// the hardware prefetcher (95 terms × 4,000 rows into 10 outputs, out of cache: 0.67 ms,
/// against 1.7–2.0 ms without the prefetch and 0.83–0.85 ms streaming 4 terms at a time).
pub(crate) const PREFETCH_AHEAD: usize = 256;
/// Elements ahead of a wide symmetric tile's columns that each row is prefetched (2 KiB in
/// `f64`), as for the combinations (no measurement of its own recorded).
pub(crate) const WIDE_PREFETCH: usize = 256;

// --- Passes over the kernel (src/passes) ---

/// Rows of `K` per parallel task of a lane-wise pass: large enough to amortise scheduling,
/// small enough to balance two threads on a shared machine (no measurement recorded).
pub(crate) const ROWS_PER_TASK: usize = 32;
/// Widest pass that reads only the upper triangle without AVX-512, by the narrow tiles of
/// 4 rows: on the AVX2 level, 3 and 4 vectors split by class ran 1.2–1.46× faster than full
/// rows (`f64` and `f32`), 5 and 6 at 0.9–1.05×; stage-3 hotelling selections 1.04–1.39×
/// faster, stage-4 projection 1.11–1.14×, the same picks.
pub(crate) const NARROW_SYMMETRIC_MAX: usize = 4;
/// Widest pass that reads only the upper triangle: a tile of 4 rows × 6 right-hand sides
/// keeps its dot products in 24 of AVX-512's 32 registers. Wider symmetric passes (blocks
/// of 5–6 right-hand sides, or tiles of 2 rows × up to 12) ran at 0.6–0.95× full rows.
pub(crate) const WIDE_SYMMETRIC_MAX: usize = 6;
/// Smallest kernel whose narrow passes read only the upper triangle (no measurement
/// recorded: a kernel this small is in L1, and fewer rows than bands would leave bands empty).
pub(crate) const SYMMETRIC_MIN_ORDER: usize = 64;
/// Bands of rows of a symmetric pass, fixed by `m` alone so that no sum depends on the
/// number of threads; enough to balance two threads on a shared machine (the triangle they
/// split took a one-vector pass split by class from ~4.3 to ~2.8 ms).
pub(crate) const SYMMETRIC_BANDS: usize = 16;
/// Right-hand sides per packed block, in SIMD vectors: three, the most a 4-row tile keeps
/// in registers with its accumulators (all 16 of AVX2's); packed tiles of 3 rows × 12
/// (`f64`) made a stage-10 pass ~1.3× faster (7.2 against 9.5 ms on 2 threads).
pub(crate) const PACKED_VECTORS: usize = 3;
/// Rows per parallel task of a packed pass: a multiple of every tile's rows (4, 6, 8 and
/// 12), so that no row of a task is left to a one-row tile (no measurement recorded).
pub(crate) const PACKED_ROWS_PER_TASK: usize = 24;
/// Rows of a pass's outputs copied out at a time into one vector per output: a block
/// (~40 KB with 20 outputs per row) stays in cache while it is read once per output (no
/// measurement recorded).
pub(crate) const BY_COLUMN_ROWS: usize = 256;
/// Outputs per combination tile: with 2 SIMD vectors each, 10 accumulators; 1.2–1.45×
/// faster than 4 terms at a time with the terms in cache (95–190 terms into 10 or 20
/// outputs), a projection stage-10 fit ~1.09× faster.
pub(crate) const COMBINE_OUTPUTS: usize = 5;

// --- The selection (src/selection) ---

/// Below this many multiply-adds the correction terms (sweeps over `U`, `V`) run on one
/// thread: a hand-over to the pool costs more than such a sweep (no measurement recorded).
pub(crate) const PARALLEL_WORK: usize = 1 << 16;
/// Average run of equal labels from which a pass splits its columns by class: a split pass
/// pays a little per run, and `GreedyKFDA.fit` orders its kernel by class (two runs; no
/// measurement recorded).
pub(crate) const MIN_CLASS_RUN: usize = 64;
/// Rows per chunk of a combination of terms: the output chunk stays in L1 while the
/// vectors stream (no measurement recorded).
pub(crate) const COMBINE_CHUNK: usize = 1024;
/// Candidates of the next schur pick multiplied with the last pick's `h` (products taken
/// ahead): the best by the scores before `h` completes `d` was the next pick in 83 % of
/// picks (95 % for the best 3) on 20-feature data, 70 % (76 %) on `make_moons` (m = 1,500,
/// k = 120). One, in a two-vector pass, beat three in a four-vector one: 1.03–1.05× on
/// AVX-512 and 1.30–1.39× at the AVX2 level, where a four-vector pass costs about two
/// one-vector passes (`profile_greedy 4000 200 schur 1`: 237 against 211 passes).
pub(crate) const SPECULATED_CANDIDATES: usize = 1;
/// Most selections that share their passes (`select_many`): each hands one or two
/// right-hand sides to a pass, and a pass streams each row of `K` from memory once for
/// all of them (blocks of 12 right-hand sides in `f64`, 24 in `f32`, the later ones from
/// cache); more threads would add little but hand-overs.
pub(crate) const SHARED_SELECTIONS: usize = 12;
/// Smallest kernel (bytes) whose selections share their passes: below, `K` stays in the
/// caches, a pass takes ~0.1 ms and the hand-over between threads costs more than the reads
/// it saves (three problems side by side at m = 1,000 in `f64`, 7.6 MiB: 0.87× the speed of
/// one after the other; 1.09× at m = 1,500; at m = 150, 0.6×).
pub(crate) const SHARED_FROM_BYTES: usize = 12 << 20;
/// Rows per block of a kernel matrix (`kernel/`): one block's GEMM output stays in cache
/// while the elementwise map runs over it (no measurement recorded).
pub(crate) const KERNEL_BLOCK_ROWS: usize = 64;
/// A feature stored by at least one in `SPARSE_DENSE_SHARE` of a sparse kernel's points is
/// held as a dense column of them (`kernel/sparse.rs`): scattering it costs about 15× a GEMM's
/// multiply-add, so a feature pays its way in the GEMM once its two sets' shares multiply to
/// about 1/15. On TF-IDF documents (`benches/bench_sparse.py --text`) the 127 terms in more
/// than a tenth of 20,000 documents are 93 % of the scattered products.
pub(crate) const SPARSE_DENSE_SHARE: usize = 8;
/// Fewest points whose frequent features go dense: a GEMM's set-up outweighs a few points.
pub(crate) const SPARSE_DENSE_FROM_POINTS: usize = 64;
/// Most dense columns (`points × 512` values in `f64`): at most `SPARSE_DENSE_SHARE` times
/// the index's own entries, and a bound for wide, evenly spread features.
pub(crate) const SPARSE_DENSE_FEATURES: usize = 512;

// --- The checks of a precomputed kernel (src/checks.rs) ---

/// Side of the square tiles of the checks' pass, which reads each pair from both triangles:
/// two 64×64 float64 tiles fit in a core's L1 and L2, so the transposed reads stay in cache
/// (no measurement recorded).
pub(crate) const CHECK_TILE: usize = 64;

// --- Prediction from a model file (src/model/) ---

/// Most rows a model predicts by the direct loop of `kernel::expansion_direct` rather than
/// the blocked GEMM: below it, packing the bases for the GEMM costs more than the products
/// (one row at k = 50, d = 20: ~1.0 µs through the GEMM; see `examples/serving_latency`).
pub(crate) const DIRECT_EXPANSION_ROWS: usize = 4;

// --- Factored kernels (src/operator/) ---

/// Rows per block of a factored product (`operator/`): the blocks, fixed by `m`, are the
/// units of work and the order of the partial sums of `Φ'X`, so no result depends on the
/// thread count; a block's `Φ` rows (1,024 × p) stream once while its partial sums stay in
/// cache (no measurement recorded).
pub(crate) const FACTOR_BLOCK_ROWS: usize = 1024;

/// Features per block of a sparse factor's transposed product and quadratic forms
/// (`operator/sparse.rs`): the units of parallel work, each a fixed range of the features, so
/// no sum depends on the thread count (no measurement recorded).
pub(crate) const SPARSE_FACTOR_BLOCK_FEATURES: usize = 256;

/// Ranges of features a thread gets in a sparse factor's quadratic forms, each of about equal
/// work (the rows of `G = X'WX` of frequent features cost the most): enough that work
/// stealing evens out what the estimate misses.
pub(crate) const SPARSE_FACTOR_BLOCKS_PER_THREAD: usize = 16;

// --- Thread pools (src/pool.rs) ---

/// Pools kept at once. A caller that cycles through many thread counts (one `n_jobs` per
/// grid point, say) would otherwise leave every pool's threads alive for the life of the
/// process; past this many the least recently used pool is dropped, and its threads exit
/// once the calls still holding it return.
pub(crate) const KEPT_POOLS: usize = 4;

// --- The Python binding (src/python/) ---

/// How often a long call looks for signals (Ctrl-C) and reports its progress while the
/// core works: 50 ms, within what a user feels as at once (no measurement recorded).
#[cfg(feature = "python")]
pub(crate) const SIGNAL_POLL: std::time::Duration = std::time::Duration::from_millis(50);
/// Kernel matrices and expansions of fewer entries than this (times features) run without
/// the signal watch: a thread spawn (~15 µs) is not worth it for a call of a few ms.
#[cfg(feature = "python")]
pub(crate) const WATCHED_KERNEL_WORK: usize = 1 << 26;
/// Most rows of a kernel expansion (an estimator's prediction) run on the calling thread
/// with the GIL held: one-row calls are too short to be worth releasing it. The estimators
/// skip their thread-count look-up up to the same size (`_core.ONE_THREAD_ROWS`).
#[cfg(feature = "python")]
pub(crate) const ONE_THREAD_ROWS: usize = 64;
