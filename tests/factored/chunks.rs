//! A factor held by chunks of rows elsewhere (`FactorSource`, here in process) against the
//! same factor in memory, and a holder that fails.

use crate::factors::*;
use gkfda::operator::{
    factor_forms_with, factor_row_norms, factor_times, factor_transpose_times,
    factor_weighted_gram, ExternalFactor, FactorSource, KernelOperator,
};
use gkfda::pursuit::{pursue_on, Method, PursuitParams};
use gkfda::selection::{select_classes_in_form, select_classes_on, select_many_on, FactoredForm};
use gkfda::{Criterion, Deflation, GreedyParams, Progress};
use ndarray::Array2;
use std::sync::atomic::AtomicBool;

/// A factor held by chunks of rows, in process: what a cluster's workers hold, with the
/// engine's row `j` the chunks' row `order[j]` (the chunks keep the caller's order, the
/// engine reads the rows ordered by class). Each operation is one round over the chunks
/// with the core's per-block kernels: partial sums reduced in chunk order, then a map.
struct ChunkedFactor {
    chunks: Vec<Array2<f64>>,
    /// `order[j]`: the chunks' row of the engine's row `j`.
    order: Vec<usize>,
    p: usize,
    pool: rayon::ThreadPool,
    /// Fails every call from this one on (counted from 0), to test the failure path.
    fail_from: Option<usize>,
    calls: std::sync::atomic::AtomicUsize,
}

impl ChunkedFactor {
    fn new(phi: &Array2<f64>, sizes: &[usize], order: Vec<usize>) -> Self {
        let mut start = 0;
        let chunks = sizes
            .iter()
            .map(|&size| {
                let chunk = phi.slice(ndarray::s![start..start + size, ..]).to_owned();
                start += size;
                chunk
            })
            .collect();
        assert_eq!(start, phi.nrows());
        ChunkedFactor {
            chunks,
            order,
            p: phi.ncols(),
            pool: rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .build()
                .unwrap(),
            fail_from: None,
            calls: Default::default(),
        }
    }

    fn counted(&self) -> gkfda::Result<()> {
        let call = self
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match self.fail_from {
            Some(from) if call >= from => Err(gkfda::Error::External(format!(
                "worker lost at call {call}"
            ))),
            _ => Ok(()),
        }
    }

    /// Engine-ordered vectors in the chunks' order, split by chunk.
    fn split_by_chunk(&self, vectors: &[&[f64]]) -> Vec<Vec<Vec<f64>>> {
        let mut original = vec![vec![0.0; self.order.len()]; vectors.len()];
        for (out, v) in original.iter_mut().zip(vectors) {
            for (j, &i) in self.order.iter().enumerate() {
                out[i] = v[j];
            }
        }
        let mut start = 0;
        self.chunks
            .iter()
            .map(|chunk| {
                let rows = start..start + chunk.nrows();
                start = rows.end;
                original.iter().map(|v| v[rows.clone()].to_vec()).collect()
            })
            .collect()
    }

    /// Per-chunk vectors (in the chunks' order) back in the engine's order.
    fn in_engine_order(&self, parts: Vec<Vec<Vec<f64>>>) -> Vec<Vec<f64>> {
        let count = parts.first().map_or(0, Vec::len);
        let original: Vec<Vec<f64>> = (0..count)
            .map(|r| {
                parts
                    .iter()
                    .flat_map(|part| part[r].iter().copied())
                    .collect()
            })
            .collect();
        original
            .iter()
            .map(|v| self.order.iter().map(|&i| v[i]).collect())
            .collect()
    }

    fn slice(chunk: &Array2<f64>) -> &[f64] {
        chunk.as_slice().unwrap()
    }

    /// `Σ_c partial(c)` in chunk order.
    fn reduce(&self, partial: impl Fn(usize) -> Vec<Vec<f64>>) -> Vec<Vec<f64>> {
        let mut total = partial(0);
        for c in 1..self.chunks.len() {
            for (t, v) in total.iter_mut().zip(partial(c)) {
                t.iter_mut().zip(v).for_each(|(t, v)| *t += v);
            }
        }
        total
    }
}

impl FactorSource<f64> for ChunkedFactor {
    fn rows_count(&self) -> usize {
        self.order.len()
    }

    fn width(&self) -> usize {
        self.p
    }

    fn multiply(&self, rhs: &[&[f64]]) -> gkfda::Result<Vec<Vec<f64>>> {
        self.counted()?;
        let parts = self.split_by_chunk(rhs);
        let ys = self.reduce(|c| {
            let rows: Vec<&[f64]> = parts[c].iter().map(Vec::as_slice).collect();
            factor_transpose_times(&self.pool, Self::slice(&self.chunks[c]), self.p, &rows)
        });
        let outputs = self
            .chunks
            .iter()
            .map(|chunk| factor_times(&self.pool, Self::slice(chunk), self.p, &ys))
            .collect();
        Ok(self.in_engine_order(outputs))
    }

    fn rows(&self, picks: &[usize]) -> gkfda::Result<Vec<Vec<f64>>> {
        self.counted()?;
        let mut starts = vec![0];
        for chunk in &self.chunks {
            starts.push(starts.last().unwrap() + chunk.nrows());
        }
        let ys: Vec<Vec<f64>> = picks
            .iter()
            .map(|&j| {
                let i = self.order[j];
                let c = starts.iter().rposition(|&s| s <= i).unwrap();
                self.chunks[c].row(i - starts[c]).to_vec()
            })
            .collect();
        let outputs = self
            .chunks
            .iter()
            .map(|chunk| factor_times(&self.pool, Self::slice(chunk), self.p, &ys))
            .collect();
        Ok(self.in_engine_order(outputs))
    }

    fn diagonal(&self) -> gkfda::Result<Vec<f64>> {
        self.counted()?;
        let parts = self
            .chunks
            .iter()
            .map(|chunk| vec![factor_row_norms(Self::slice(chunk), self.p)])
            .collect();
        Ok(self.in_engine_order(parts).remove(0))
    }

    fn column_forms(&self, weights: Option<&[f64]>) -> gkfda::Result<Vec<f64>> {
        self.counted()?;
        let weight_parts = weights.map(|w| self.split_by_chunk(&[w]));
        let gram = self.reduce(|c| {
            let w = weight_parts.as_ref().map(|parts| parts[c][0].as_slice());
            let gram = factor_weighted_gram(&self.pool, Self::slice(&self.chunks[c]), self.p, w);
            vec![gram.into_raw_vec_and_offset().0]
        });
        let gram =
            Array2::from_shape_vec((self.p, self.p), gram.into_iter().next().unwrap()).unwrap();
        let parts = self
            .chunks
            .iter()
            .map(|chunk| {
                vec![factor_forms_with(
                    &self.pool,
                    Self::slice(chunk),
                    self.p,
                    gram.view(),
                )]
            })
            .collect();
        Ok(self.in_engine_order(parts).remove(0))
    }
}

/// The rows of `phi` ordered by `order` (the engine's order).
fn ordered(phi: &Array2<f64>, order: &[usize]) -> Array2<f64> {
    phi.select(ndarray::Axis(0), order)
}

/// Class codes in the caller's order and the order that sorts them (stable), as `fit`'s.
fn by_class(codes: &[u32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..codes.len()).collect();
    order.sort_by_key(|&i| codes[i]);
    order
}

#[test]
fn a_factor_held_by_chunks_picks_as_the_factor_in_memory() {
    let (mut compared, mut mismatches) = (0, Vec::new());
    // Uneven chunks, a chunk of one row, and (kind 0, three classes) chunks of one class.
    for (kind, n_classes, sizes) in [
        (0, 2, vec![1, 40, 50, 69]),
        (1, 2, vec![80, 80]),
        (2, 3, vec![33, 1, 126]),
        (0, 3, vec![160]),
    ] {
        let seed = 500 + kind as u64 * 10 + u64::from(n_classes);
        let phi = factor(160, 24, kind, seed);
        let codes = classes(160, n_classes, false, seed);
        let order = by_class(&codes);
        let in_memory = ordered(&phi, &order);
        let reps = representatives(&in_memory);
        let same = |picks: &[usize]| -> Vec<usize> { picks.iter().map(|&i| reps[i]).collect() };
        let sorted: Vec<u32> = order.iter().map(|&i| codes[i]).collect();
        let factored = KernelOperator::factored_of(&in_memory.view(), "factor").unwrap();
        let chunked = ChunkedFactor::new(&phi, &sizes, order.clone());
        for criterion in Criterion::ALL.map(|(c, _)| c) {
            for deflation in Deflation::ALL.map(|(d, _)| d) {
                for stages in [1, 3] {
                    let params = GreedyParams {
                        k: 12,
                        criterion,
                        deflation,
                        stages,
                        seed: 3,
                        ..GreedyParams::default()
                    };
                    let stop = AtomicBool::new(false);
                    // The chunked holder keeps the terms form: compared with it in memory, passes too.
                    let progress = Progress::new();
                    let terms = FactoredForm::Terms;
                    let expected =
                        select_classes_in_form(factored, &sorted, &params, &stop, &progress, terms)
                            .unwrap();
                    let external = ExternalFactor::new(&chunked, &stop);
                    let outcome = select_classes_on(external.operator(), &sorted, &params, &stop);
                    let got = external.outcome(outcome).unwrap();
                    compared += 1;
                    let tie = tie_at((kind == 1).then_some(6), criterion, deflation);
                    // After a tie the picks part ways, and so may the passes (a schur pick
                    // taken ahead or not): passes are compared where the picks are equal.
                    let equal = same(&expected.indices) == same(&got.indices);
                    if !agree(&same(&expected.indices), &same(&got.indices), tie)
                        || (equal && expected.kernel_passes != got.kernel_passes)
                    {
                        mismatches.push(format!(
                            "kind={kind} classes={n_classes} {criterion:?} {deflation:?} stages={stages}: \
                             in memory {:?} chunked {:?}",
                            expected.indices, got.indices
                        ));
                    }
                }
            }
        }
        // One-vs-rest, side by side: the chunked factor is read from several threads.
        let labels: Vec<Vec<bool>> = (0..n_classes)
            .map(|c| sorted.iter().map(|&code| code == c).collect())
            .collect();
        let params = GreedyParams {
            k: 10,
            deflation: Deflation::Schur,
            ..GreedyParams::default()
        };
        let problems: Vec<(&[bool], GreedyParams)> = labels
            .iter()
            .map(|l| (l.as_slice(), params.clone()))
            .collect();
        let stop = AtomicBool::new(false);
        let expected = select_many_on(factored, &problems, &stop).unwrap();
        let external = ExternalFactor::new(&chunked, &stop);
        let got = external
            .outcome(select_many_on(external.operator(), &problems, &stop))
            .unwrap();
        for (e, g) in expected.iter().zip(&got) {
            let tie = tie_at((kind == 1).then_some(6), params.criterion, params.deflation);
            assert!(
                agree(&same(&e.indices), &same(&g.indices), tie),
                "ovr: {:?} {:?}",
                e.indices,
                g.indices
            );
        }
        // The pursuits' quadratic forms and diagonal come from the chunks too.
        for method in [
            Method::Components,
            Method::Fisher {
                classes: &sorted,
                criterion: Criterion::Optimal,
                seed: 1,
            },
        ] {
            let params = PursuitParams {
                k: 8,
                ..PursuitParams::default()
            };
            let expected = pursue_on(factored, &method, &params, &stop).unwrap();
            let external = ExternalFactor::new(&chunked, &stop);
            let got = external
                .outcome(pursue_on(external.operator(), &method, &params, &stop))
                .unwrap();
            let tie = (kind == 1).then_some(6);
            assert!(
                agree(&same(&expected.indices), &same(&got.indices), tie),
                "pursuit: {:?} {:?}",
                expected.indices,
                got.indices
            );
        }
    }
    println!(
        "chunked selections: {} of {compared} pick alike",
        compared - mismatches.len()
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn a_failing_factor_holder_stops_the_selection_with_its_error() {
    let phi = factor(120, 16, 0, 9);
    let codes = classes(120, 2, true, 9);
    let order: Vec<usize> = (0..120).collect();
    for fail_from in [0, 1, 3] {
        let mut chunked = ChunkedFactor::new(&phi, &[60, 60], order.clone());
        chunked.fail_from = Some(fail_from);
        for deflation in [Deflation::Projection, Deflation::Schur] {
            chunked.calls.store(0, std::sync::atomic::Ordering::Relaxed);
            let params = GreedyParams {
                k: 10,
                deflation,
                ..GreedyParams::default()
            };
            let stop = AtomicBool::new(false);
            let external = ExternalFactor::new(&chunked, &stop);
            let outcome = select_classes_on(external.operator(), &codes, &params, &stop);
            let error = external.outcome(outcome).unwrap_err();
            assert_eq!(
                error,
                gkfda::Error::External(format!("worker lost at call {fail_from}"))
            );
            // Nothing is asked of the holder once it has failed.
            assert_eq!(
                chunked.calls.load(std::sync::atomic::Ordering::Relaxed),
                fail_from + 1
            );
        }
    }
    // A pursuit of two views cannot hold either away from the other.
    let chunked = ChunkedFactor::new(&phi, &[120], order);
    let stop = AtomicBool::new(false);
    let external = ExternalFactor::new(&chunked, &stop);
    let method = Method::Correlation {
        second: KernelOperator::factored_of(&phi.view(), "second").unwrap(),
        signed: true,
    };
    let params = PursuitParams {
        k: 3,
        ..PursuitParams::default()
    };
    let error = pursue_on(external.operator(), &method, &params, &stop).unwrap_err();
    assert!(error.to_string().starts_with("second_factor: "), "{error}");
}
