//! `gkfda::Model` and the C ABI: files written here per docs/model-format.md (`spec`)
//! against predictions computed by hand (`specification`), every corruption refused without a
//! panic (`corruption`, `files`), one model shared by threads and the C ABI (`clients`), and
//! parity with the Python estimators' own predictions (tests/data/models, `parity`).

mod clients;
mod corruption;
mod files;
mod parity;
mod spec;
mod specification;
