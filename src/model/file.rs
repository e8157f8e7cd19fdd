//! The model file as bytes: read from a regular file, never more than its header accounts
//! for; the header's limits and rules, JSON without repeated keys, the checksum.

use super::{invalid, Model, CHECKSUM, MAX_DIMENSIONS, MAX_HEADER_BYTES};
use crate::error::{Error, Result};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};
use serde::de::{Deserializer as _, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Read;
use std::ops::Range;
use std::path::Path;

impl Model {
    /// Reads and checks the model file at `path`.
    ///
    /// Only a regular file is read (a FIFO or a device would block or never end), and
    /// only as many bytes as its header accounts for: the 8-byte length, then the header
    /// (at most [`MAX_HEADER_BYTES`]), then the tensors' bytes; a file of another size is
    /// refused before its data is read. Errors name `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        let path = path.as_ref();
        let named = |error: Error| match error {
            Error::InvalidModel(message) => {
                Error::InvalidModel(format!("{}: {message}", path.display()))
            }
            other => other,
        };
        let bytes = read_file(path).map_err(named)?;
        Model::from_bytes(&bytes).map_err(named)
    }

    /// Reads and checks a model file's bytes. Nothing in them is trusted: any
    /// inconsistency is an [`Error::InvalidModel`] naming it.
    pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
        let header = header_length(bytes.first_chunk::<8>(), bytes.len() as u64)?;
        let data = check_header(bytes.get(8..8 + header).unwrap_or_default())?;
        check_size(header, data, bytes.len() as u64)?;
        let (header, metadata) = SafeTensors::read_metadata(bytes)
            .map_err(|e| invalid(format!("not a safetensors file: {e}")))?;
        let range = checksum_range(header, &metadata)?;
        if checksum(bytes, range.clone())[..] != bytes[range] {
            return Err(invalid(
                "corrupted: its bytes do not match its SHA-256 checksum",
            ));
        }
        let tensors = SafeTensors::deserialize(bytes)
            .map_err(|e| invalid(format!("not a safetensors file: {e}")))?;
        let text = match metadata.metadata() {
            Some(map) if map.len() == 1 && map.contains_key("gkfda") => {
                map.get("gkfda").map_or("", String::as_str)
            }
            Some(map) if map.contains_key("gkfda") => {
                let mut others: Vec<_> = map.keys().filter(|k| *k != "gkfda").collect();
                others.sort();
                return Err(invalid(format!(
                    "__metadata__ has keys other than \"gkfda\": {others:?}"
                )));
            }
            _ => return Err(invalid("__metadata__ has no \"gkfda\" entry")),
        };
        let meta = unique_json(text).map_err(|e| {
            invalid(format!(
                "the metadata is not JSON without repeated keys: {e}"
            ))
        })?;
        Model::from_parts(&meta, &tensors)
    }
}

/// The header's length from the file's first 8 bytes (`None`: the file is shorter),
/// checked against the limit and against the file's `size`.
fn header_length(first: Option<&[u8; 8]>, size: u64) -> Result<usize> {
    let Some(first) = first else {
        return Err(invalid(format!(
            "{size} bytes is shorter than the 8-byte header length"
        )));
    };
    let header = u64::from_le_bytes(*first);
    if header > MAX_HEADER_BYTES {
        return Err(invalid(format!(
            "header of {header} bytes exceeds the limit of {MAX_HEADER_BYTES}"
        )));
    }
    if header > size - 8 {
        return Err(invalid(format!(
            "header of {header} bytes runs past the end of the file ({size} bytes)"
        )));
    }
    usize::try_from(header).map_err(|_| invalid("the header does not fit in memory"))
}

/// The rules of the header the safetensors crate lets through: no key twice (the crate
/// keeps the last), each tensor's entry exactly `dtype`, `shape` and `data_offsets`, at
/// most [`MAX_DIMENSIONS`] dimensions. Returns the end of the tensors' data (the largest
/// end offset), which the crate checks against the rest of the header.
fn check_header(header: &[u8]) -> Result<u64> {
    let text = std::str::from_utf8(header).map_err(|e| {
        invalid(format!(
            "not a safetensors file: the header is not UTF-8: {e}"
        ))
    })?;
    let header = unique_json(text).map_err(|e| {
        invalid(format!(
            "not a safetensors file: the header is not JSON without repeated keys: {e}"
        ))
    })?;
    let Value::Object(entries) = header else {
        return Err(invalid(
            "not a safetensors file: the header is not a JSON object",
        ));
    };
    let mut end = 0;
    for (name, entry) in entries.iter().filter(|(name, _)| *name != "__metadata__") {
        let entry = match entry {
            Value::Object(entry)
                if entry.len() == 3
                    && ["dtype", "shape", "data_offsets"]
                        .iter()
                        .all(|key| entry.contains_key(*key)) =>
            {
                entry
            }
            _ => {
                return Err(invalid(format!(
                    "tensor {name:?}: its header entry must have exactly dtype, shape and \
                     data_offsets"
                )))
            }
        };
        if let Some(Value::Array(shape)) = entry.get("shape") {
            if shape.len() > MAX_DIMENSIONS {
                return Err(invalid(format!(
                    "tensor {name:?} has {} dimensions; the format allows at most \
                     {MAX_DIMENSIONS}",
                    shape.len()
                )));
            }
        }
        if let Some(Value::Array(offsets)) = entry.get("data_offsets") {
            if let Some(stop) = offsets.get(1).and_then(Value::as_u64) {
                end = u64::max(end, stop);
            }
        }
    }
    Ok(end)
}

/// A file of `size` bytes holds exactly its header's `header` bytes and `data` bytes of
/// tensors after the 8-byte length.
fn check_size(header: usize, data: u64, size: u64) -> Result<()> {
    let expected = (8 + header as u64).saturating_add(data);
    if size > expected {
        return Err(invalid(format!(
            "the file has {size} bytes, more than the {expected} its header accounts for"
        )));
    }
    if size < expected {
        return Err(invalid(format!(
            "truncated: the file has {size} bytes, fewer than the {expected} its header \
             accounts for"
        )));
    }
    Ok(())
}

/// The bytes of the model file at `path`, read as [`Model::load`] says: a regular file
/// only, and never more bytes than its header accounts for.
fn read_file(path: &Path) -> Result<Vec<u8>> {
    let io = |message: String| Error::Io {
        path: path.display().to_string(),
        message,
    };
    // The type is checked before opening: opening a FIFO for reading blocks until a
    // writer comes.
    let regular = |kind: std::fs::FileType| {
        if kind.is_file() {
            Ok(())
        } else {
            let what = if kind.is_dir() {
                "a directory"
            } else if kind.is_symlink() {
                "a symbolic link"
            } else {
                "a FIFO, socket or device"
            };
            Err(io(format!(
                "is not a regular file (it is {what}); a model file is read from a regular file"
            )))
        }
    };
    let metadata = std::fs::metadata(path).map_err(|e| io(e.to_string()))?;
    regular(metadata.file_type())?;
    let mut file = std::fs::File::open(path).map_err(|e| io(e.to_string()))?;
    // The path may name another file by now: the opened one is checked again.
    let metadata = file.metadata().map_err(|e| io(e.to_string()))?;
    regular(metadata.file_type())?;
    let size = metadata.len();
    let mut first = [0u8; 8];
    let length = header_length(
        match size {
            0..8 => None,
            _ => {
                file.read_exact(&mut first).map_err(|e| io(e.to_string()))?;
                Some(&first)
            }
        },
        size,
    )?;
    let mut header = Vec::new();
    (&mut file)
        .take(length as u64)
        .read_to_end(&mut header)
        .map_err(|e| io(e.to_string()))?;
    if header.len() != length {
        return Err(io("the file shrank while it was read".to_string()));
    }
    let data = check_header(&header)?;
    check_size(length, data, size)?;
    let data_length =
        usize::try_from(data).map_err(|_| invalid("the data does not fit in memory"))?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(8 + length + data_length)
        .map_err(|_| Error::OutOfMemory {
            what: "the model file",
            bytes: 8 + length + data_length,
        })?;
    bytes.extend_from_slice(&first);
    bytes.extend_from_slice(&header);
    (&mut file)
        .take(data)
        .read_to_end(&mut bytes)
        .map_err(|e| io(e.to_string()))?;
    let mut more = [0u8; 1];
    let grown = file.read(&mut more).map_err(|e| io(e.to_string()))? != 0;
    if bytes.len() as u64 != size || grown {
        return Err(io("the file changed size while it was read".to_string()));
    }
    Ok(bytes)
}

/// `text` as JSON, refused if an object has a key twice (`serde_json::Value` would keep
/// the last silently, where the Python reader refuses).
fn unique_json(text: &str) -> serde_json::Result<Value> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = deserializer.deserialize_any(UniqueKeys)?;
    deserializer.end()?;
    Ok(value)
}

/// Builds a [`Value`] as `serde_json` does, but refuses a repeated key.
struct UniqueKeys;

impl<'de> serde::de::DeserializeSeed<'de> for UniqueKeys {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> std::result::Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("{v} is not a JSON number")))
    }

    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        let mut values = Vec::new();
        while let Some(value) = seq.next_element_seed(UniqueKeys)? {
            values.push(value);
        }
        Ok(Value::Array(values))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(A::Error::custom(format!(
                    "the key {key:?} appears twice in an object"
                )));
            }
            let value = map.next_value_seed(UniqueKeys)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// The byte range of the `checksum` tensor in the file, which must be `U8` of shape `[32]`.
fn checksum_range(header: usize, metadata: &safetensors::tensor::Metadata) -> Result<Range<usize>> {
    match metadata.info(CHECKSUM) {
        Some(info) if info.dtype == Dtype::U8 && info.shape == [32] => {
            let (begin, end) = info.data_offsets;
            Ok(8 + header + begin..8 + header + end)
        }
        _ => Err(invalid(format!(
            "the header has no {CHECKSUM:?} tensor of 32 bytes (U8)"
        ))),
    }
}

/// The SHA-256 of `bytes` without those of `range`.
fn checksum(bytes: &[u8], range: Range<usize>) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(&bytes[..range.start]);
    hasher.update(&bytes[range.end..]);
    hasher.finalize().into()
}

/// Writes into a model file's `checksum` tensor the SHA-256 of every other byte, as a
/// writer does last (it wrote the tensor as 32 zeros first). An error if `bytes` is not
/// a safetensors file with such a tensor.
pub fn seal(bytes: &mut [u8]) -> Result<()> {
    let (header, metadata) = SafeTensors::read_metadata(bytes)
        .map_err(|e| invalid(format!("not a safetensors file: {e}")))?;
    let range = checksum_range(header, &metadata)?;
    let digest = checksum(bytes, range.clone());
    bytes[range].copy_from_slice(&digest);
    Ok(())
}

/// The bytes of a small two-class RBF model file (two bases in two features), for the
/// documentation's examples.
#[doc(hidden)]
pub fn example_file() -> Vec<u8> {
    let predictor = serde_json::json!({
        "format": "gkfda", "format_version": 1, "gkfda_version": "0.1.0",
        "estimator": "GreedyKFDA", "lean": true, "params": {}, "state": {},
        "predictor": {
            "task": "classifier", "kernel": "rbf", "gamma": 0.5, "degree": 3, "coef0": 1.0,
            "dtype": "float64", "n_features": 2, "n_bases": 2, "n_outputs": 1,
            "link": "logistic", "classes": {"kind": "int", "values": [0, 1]}
        }
    });
    let bytes = |v: &[f64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let tensors = [
        (
            "predict.points",
            Dtype::F64,
            vec![2, 2],
            bytes(&[0.0, 0.0, 1.0, 1.0]),
        ),
        (
            "predict.weights",
            Dtype::F64,
            vec![2, 1],
            bytes(&[-2.0, 2.0]),
        ),
        ("predict.bias", Dtype::F64, vec![1], bytes(&[0.1])),
        (CHECKSUM, Dtype::U8, vec![32], vec![0; 32]),
    ];
    let views: Vec<_> = tensors
        .iter()
        .map(|(name, dtype, shape, data)| {
            let view = TensorView::new(*dtype, shape.clone(), data).expect("consistent");
            (*name, view)
        })
        .collect();
    let metadata = HashMap::from([("gkfda".to_string(), predictor.to_string())]);
    let mut file = safetensors::serialize(views, Some(metadata)).expect("a valid file");
    seal(&mut file).expect("a checksum tensor");
    file
}
