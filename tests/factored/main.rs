//! The factored kernel operator against the dense one (the oracle): for random factors `Φ`
//! (full rank, rank-deficient, with duplicated rows), the selection on `ΦΦ'` held as its
//! factor picks what the dense engine picks on the explicit `ΦΦ'`, for every criterion ×
//! deflation × stages ∈ {1, 3}, two and three classes (shared and one-vs-rest) (`selection`),
//! and the pursuits of the matching-pursuit family (`pursuits`). A factor held by chunks of
//! rows elsewhere (`FactorSource`, here in process) picks as the same factor in memory
//! (`chunks`). As properties over random factors (`p` from 1, rank-deficient, duplicated
//! rows, `m` past a block of rows, a class of a few points), every criterion × deflation ×
//! stages ∈ {1, 2, 3} picks as the dense engine (`properties`).
//!
//! Duplicated rows of `Φ` give identical kernel columns: their scores tie exactly, and
//! which copy a selection takes depends on the last bit of sums that each engine orders
//! differently (the dense passes read the triangle by bands). Picks are compared with each
//! index replaced by the first row equal to it, which is the same basis (`factors`).

#[path = "../common/mod.rs"]
mod common;

mod chunks;
mod factors;
mod properties;
mod pursuits;
mod selection;
