//! A fixed greedy run for profilers: `cargo run --release --example profile_greedy -- 2000 100 schur 1`
//! (m, k, deflation, stages[, threads[, sorted[, repeats[, huge]]]]), plus anywhere
//! `criterion=NAME` (default `optimal`) and `f32` (select in `float32`, from the `f64` kernel
//! rounded): `sorted` puts the positive class first; `repeats` runs of the selection (the time printed is the median) make a profile
//! of the whole program mostly the selection; `huge` puts the kernel on pages advised as huge
//! pages, as NumPy advises the arrays the package builds its kernels in (Linux only). Under
//! `valgrind --tool=callgrind` the instruction counts per function are repeatable, unlike
//! timings on a shared machine. `GKFDA_SIMD=avx2` (or `none`) runs the engine of a CPU
//! without AVX-512 (or without AVX2 and FMA) on this one ([`gkfda::simd`]).

use gkfda::{kernel, selection, GreedyParams, Kernel};
use ndarray::Array2;

fn main() {
    // `criterion=NAME` and `f32` may stand anywhere; the rest is positional.
    let (options, args): (Vec<String>, Vec<String>) =
        std::env::args().partition(|a| a.starts_with("criterion=") || a == "f32");
    let criterion = options
        .iter()
        .find_map(|a| a.strip_prefix("criterion="))
        .unwrap_or("optimal");
    let single = options.iter().any(|a| a == "f32");
    let m: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let k: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100);
    let deflation = args.get(3).map(String::as_str).unwrap_or("schur");
    let stages: usize = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(1);
    let n_threads: usize = args.get(5).and_then(|a| a.parse().ok()).unwrap_or(1);
    let mut state = 7u64;
    let x = Array2::from_shape_fn((m, 20), |_| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    });
    let mut labels: Vec<bool> = (0..m).map(|i| x[[i, 0]] + x[[i, 1]].sin() > 0.0).collect();
    let x = if args.get(6).map(String::as_str) == Some("sorted") {
        // The positive class first, as `GreedyKFDA.fit` orders its training set.
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_by_key(|&i| !labels[i]);
        labels = order.iter().map(|&i| labels[i]).collect();
        x.select(ndarray::Axis(0), &order)
    } else {
        x
    };
    let huge = args.get(8).map(String::as_str) == Some("huge");
    let mut storage = KernelStorage::new(m, huge);
    kernel::gram_into(
        x.view(),
        &Kernel::Rbf { gamma: 0.5 },
        1,
        storage.view_mut(m),
    )
    .expect("kernel");
    let gram = storage.view(m);
    let params = GreedyParams {
        k,
        criterion: criterion.parse().expect("criterion name"),
        deflation: deflation.parse().expect("deflation name"),
        stages,
        n_threads,
        ..GreedyParams::default()
    };
    let repeats: usize = args.get(7).and_then(|a| a.parse().ok()).unwrap_or(1);
    let gram32 = single.then(|| gram.mapv(|v| v as f32));
    let mut seconds = Vec::new();
    let mut selection = None;
    for _ in 0..repeats.max(1) {
        let start = std::time::Instant::now();
        selection = Some(
            match &gram32 {
                Some(gram32) => selection::select(gram32.view(), &labels, &params),
                None => selection::select(gram.view(), &labels, &params),
            }
            .expect("selection"),
        );
        seconds.push(start.elapsed().as_secs_f64());
    }
    seconds.sort_by(f64::total_cmp);
    let selection = selection.expect("at least one run");
    // A fingerprint of the chosen indices in order, to compare two builds' selections.
    let fingerprint = selection.indices.iter().fold(0u64, |hash, &i| {
        (hash ^ i as u64).wrapping_mul(0x0100_0000_01b3)
    });
    println!(
        "{} bases (fingerprint {fingerprint:016x}), {} passes over the kernel, {:.6} s",
        selection.indices.len(),
        selection.kernel_passes,
        seconds[seconds.len() / 2]
    );
}

/// The kernel's `m×m` values, in a buffer whose 2 MiB-aligned part is advised as huge pages
/// when asked (what NumPy does for its large arrays), so that the passes see the TLB the
/// package's kernels see.
struct KernelStorage {
    buffer: Vec<f64>,
    offset: usize,
}

const HUGE_PAGE: usize = 2 << 20;

#[cfg(target_os = "linux")]
extern "C" {
    fn madvise(address: *mut std::ffi::c_void, length: usize, advice: i32) -> i32;
}

impl KernelStorage {
    fn new(m: usize, huge: bool) -> Self {
        let slack = HUGE_PAGE / std::mem::size_of::<f64>();
        let mut buffer: Vec<f64> = Vec::with_capacity(m * m + slack);
        let address = buffer.as_ptr() as usize;
        let offset = if huge {
            (address.next_multiple_of(HUGE_PAGE) - address) / std::mem::size_of::<f64>()
        } else {
            0
        };
        #[cfg(target_os = "linux")]
        if huge {
            const MADV_HUGEPAGE: i32 = 14;
            let length = (m * m * std::mem::size_of::<f64>()).next_multiple_of(HUGE_PAGE);
            // SAFETY: the range lies inside the buffer's allocation (offset + m² values
            // plus at most one huge page of slack); advice only, no memory is changed.
            let status = unsafe {
                madvise(
                    buffer.as_mut_ptr().add(offset).cast(),
                    length.min((buffer.capacity() - offset) * std::mem::size_of::<f64>()),
                    MADV_HUGEPAGE,
                )
            };
            assert_eq!(status, 0, "madvise(MADV_HUGEPAGE) failed");
        }
        buffer.resize(offset + m * m, 0.0);
        Self { buffer, offset }
    }

    fn view_mut(&mut self, m: usize) -> ndarray::ArrayViewMut2<'_, f64> {
        ndarray::ArrayViewMut2::from_shape((m, m), &mut self.buffer[self.offset..])
            .expect("m×m values")
    }

    fn view(&self, m: usize) -> ndarray::ArrayView2<'_, f64> {
        ndarray::ArrayView2::from_shape((m, m), &self.buffer[self.offset..]).expect("m×m values")
    }
}
