//! Combinations of deflation terms: `out −= Σ_r c_r v_r` for many outputs at once.

use crate::real::Real;
use crate::tuning::COMBINE_OUTPUTS;

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
