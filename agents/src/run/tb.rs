//! TensorBoard scalars, written synchronously with errors that name the file.
//!
//! An event file is a sequence of TFRecord frames (`len u64`, masked CRC-32C of `len`, the
//! data, masked CRC-32C of the data), each holding one `Event` protocol buffer: first the file
//! version, then one event per scalar (`wall_time`, `step`, and a `Summary` with one
//! `simple_value`). The protobufs are encoded by hand: five fields are all scalars need. The
//! bytes are those tensorboard-rs writes (checked in this file's tests), but every write
//! happens on the caller's thread and returns its error: tensorboard-rs writes on a thread of
//! its own and panics on a full disk.

use crate::run::io_error;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// An open event file in a log directory.
pub struct EventWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl EventWriter {
    /// Create `logdir` if needed and a new event file in it, named as TensorBoard expects
    /// (`events.out.tfevents.<seconds>.<host>.<pid>.0`).
    pub fn create(logdir: &Path) -> crate::error::Result<Self> {
        if std::fs::symlink_metadata(logdir).is_ok_and(|m| !m.is_dir()) {
            return Err(crate::error::user(format!(
                "{}: exists and is not a directory (TensorBoard writes its event files there)",
                logdir.display()
            )));
        }
        std::fs::create_dir_all(logdir).map_err(|e| io_error(logdir, "creating", e))?;
        let now = wall_time();
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "localhost".into());
        let name = format!("events.out.tfevents.{:010}.{host}.{}.0", now as u64, std::process::id());
        let path = logdir.join(name);
        let file = File::create(&path).map_err(|e| io_error(&path, "creating", e))?;
        let mut w = Self {
            path,
            out: BufWriter::new(file),
        };
        w.record(&version_event(now))?;
        w.flush()?;
        Ok(w)
    }

    /// Append one scalar at `step`.
    pub fn scalar(&mut self, tag: &str, value: f32, step: u64) -> crate::error::Result<()> {
        self.record(&scalar_event(wall_time(), step, tag, value))
    }

    /// Record the run's hyperparameters for TensorBoard's HPARAMS tab (the hparams plugin's
    /// `session_start_info`): every value of `config` (a resolved config), flattened to dotted
    /// keys. The tab's metrics are the run's scalars.
    pub fn hparams(&mut self, config: &toml::Table, group: &str) -> crate::error::Result<()> {
        let mut info = tensorboard_proto::plugin_hparams::SessionStartInfo::new();
        flatten("", &toml::Value::Table(config.clone()), info.mut_hparams());
        info.set_group_name(group.to_string());
        info.set_start_time_secs(wall_time());
        let mut data = tensorboard_proto::plugin_hparams::HParamsPluginData::new();
        data.set_session_start_info(info);
        self.plugin_event("_hparams_/session_start_info", &data)
    }

    /// Close the HPARAMS session (`session_end_info`), successful or not.
    pub fn hparams_end(&mut self, success: bool) -> crate::error::Result<()> {
        let mut info = tensorboard_proto::plugin_hparams::SessionEndInfo::new();
        info.set_status(if success {
            tensorboard_proto::api::Status::STATUS_SUCCESS
        } else {
            tensorboard_proto::api::Status::STATUS_FAILURE
        });
        info.set_end_time_secs(wall_time());
        let mut data = tensorboard_proto::plugin_hparams::HParamsPluginData::new();
        data.set_session_end_info(info);
        self.plugin_event("_hparams_/session_end_info", &data)?;
        self.flush()
    }

    /// An event with one summary value of the hparams plugin, as TensorBoard's own
    /// `hparams.summary` writes it (plugin data in the metadata, an empty float tensor).
    fn plugin_event(&mut self, tag: &str, data: &tensorboard_proto::plugin_hparams::HParamsPluginData) -> crate::error::Result<()> {
        use protobuf::Message;
        use tensorboard_proto::summary::{Summary, SummaryMetadata, Summary_Value};
        let encode = |m: &dyn Message| m.write_to_bytes().map_err(|e| crate::error::failed(format!("encoding {tag}: {e}")));
        let mut meta = SummaryMetadata::new();
        meta.mut_plugin_data().set_plugin_name("hparams".into());
        meta.mut_plugin_data().set_content(encode(data)?);
        let mut tensor = tensorboard_proto::tensor::TensorProto::new();
        tensor.set_dtype(tensorboard_proto::types::DataType::DT_FLOAT);
        let mut dim = tensorboard_proto::tensor_shape::TensorShapeProto_Dim::new();
        dim.set_size(0);
        tensor.mut_tensor_shape().mut_dim().push(dim);
        let mut value = Summary_Value::new();
        value.set_tag(tag.into());
        value.set_metadata(meta);
        value.set_tensor(tensor);
        let mut summary = Summary::new();
        summary.mut_value().push(value);
        let mut event = tensorboard_proto::event::Event::new();
        event.set_wall_time(wall_time());
        event.set_summary(summary);
        self.record(&encode(&event)?)
    }

    /// Push buffered events to the file.
    pub fn flush(&mut self) -> crate::error::Result<()> {
        self.out.flush().map_err(|e| io_error(&self.path, "writing", e))
    }

    fn record(&mut self, data: &[u8]) -> crate::error::Result<()> {
        let frame = frame(data);
        self.out.write_all(&frame).map_err(|e| io_error(&self.path, "writing", e))
    }
}

/// Config values as hparams: scalars as themselves, arrays of tables by index
/// (`env.agents[0].load`), other arrays as their TOML text.
fn flatten(prefix: &str, v: &toml::Value, out: &mut std::collections::HashMap<String, protobuf::well_known_types::Value>) {
    let mut leaf = protobuf::well_known_types::Value::new();
    match v {
        toml::Value::Table(t) => {
            for (k, x) in t {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&key, x, out);
            }
            return;
        }
        toml::Value::Array(a) if a.iter().all(toml::Value::is_table) && !a.is_empty() => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), x, out);
            }
            return;
        }
        toml::Value::Boolean(b) => leaf.set_bool_value(*b),
        toml::Value::Integer(i) => leaf.set_number_value(*i as f64),
        toml::Value::Float(x) => leaf.set_number_value(*x),
        toml::Value::String(s) => leaf.set_string_value(s.clone()),
        other => leaf.set_string_value(other.to_string()),
    }
    out.insert(prefix.to_string(), leaf);
}

fn wall_time() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// One TFRecord frame around `data`.
pub fn frame(data: &[u8]) -> Vec<u8> {
    let len = (data.len() as u64).to_le_bytes();
    let mut out = Vec::with_capacity(data.len() + 16);
    out.extend_from_slice(&len);
    out.extend_from_slice(&masked_crc32c(&len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&masked_crc32c(data).to_le_bytes());
    out
}

/// CRC-32C (Castagnoli), bitwise: event files are small and written once per episode.
pub fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0x82F6_3B78 } else { crc >> 1 };
        }
    }
    !crc
}

/// TFRecord's masked CRC.
pub fn masked_crc32c(data: &[u8]) -> u32 {
    let c = crc32c(data);
    (c.rotate_right(15)).wrapping_add(0xa282_ead8)
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited field (`wire type 2`).
fn bytes_field(field: u64, bytes: &[u8], out: &mut Vec<u8>) {
    varint(field << 3 | 2, out);
    varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// `Event { wall_time: 1 (double), file_version: 3 (string) }`.
fn version_event(wall_time: f64) -> Vec<u8> {
    let mut e = vec![0x09];
    e.extend_from_slice(&wall_time.to_le_bytes());
    bytes_field(3, b"brain.Event:2", &mut e);
    e
}

/// `Event { wall_time: 1, step: 2 (int64), summary: 5 { value: 1 { tag: 1, simple_value: 2 (float) } } }`.
fn scalar_event(wall_time: f64, step: u64, tag: &str, value: f32) -> Vec<u8> {
    let mut v = Vec::new();
    bytes_field(1, tag.as_bytes(), &mut v);
    v.push(0x15);
    v.extend_from_slice(&value.to_le_bytes());
    let mut summary = Vec::new();
    bytes_field(1, &v, &mut summary);
    let mut e = vec![0x09];
    e.extend_from_slice(&wall_time.to_le_bytes());
    if step != 0 {
        // proto3 leaves a zero step out, as tensorboard-rs's encoder does.
        e.push(0x10);
        varint(step, &mut e);
    }
    bytes_field(5, &summary, &mut e);
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_of_the_standard_check_string() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }

    /// Split an event file into its records, checking both CRCs of each.
    fn records(bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut p = 0;
        while p < bytes.len() {
            let len = u64::from_le_bytes(bytes[p..p + 8].try_into().unwrap()) as usize;
            assert_eq!(
                u32::from_le_bytes(bytes[p + 8..p + 12].try_into().unwrap()),
                masked_crc32c(&bytes[p..p + 8])
            );
            let data = &bytes[p + 12..p + 12 + len];
            assert_eq!(
                u32::from_le_bytes(bytes[p + 12 + len..p + 16 + len].try_into().unwrap()),
                masked_crc32c(data)
            );
            out.push(data.to_vec());
            p += 16 + len;
        }
        out
    }

    fn only_file(dir: &Path) -> Vec<u8> {
        let files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(files.len(), 1, "{files:?}");
        std::fs::read(&files[0]).unwrap()
    }

    #[test]
    fn events_are_the_bytes_tensorboard_rs_writes() {
        let base = std::env::temp_dir().join(format!("mtf-tb-{}", std::process::id()));
        let (ours, theirs) = (base.join("ours"), base.join("theirs"));
        let mut w = EventWriter::create(&ours).unwrap();
        let mut t = tensorboard_rs::summary_writer::SummaryWriter::new(&theirs);
        for (tag, v, step) in [
            ("charts/welfare", 101.25f32, 0u64),
            ("losses/actor", -0.5, 7),
            ("perf/steps_per_second", 3.0e5, 300),
        ] {
            w.scalar(tag, v, step).unwrap();
            t.add_scalar(tag, v, step as usize);
        }
        w.flush().unwrap();
        t.flush();
        drop(t);
        let (a, b) = (records(&only_file(&ours)), records(&only_file(&theirs)));
        assert_eq!(a.len(), 4);
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            // Same bytes but for the wall time (field 1, bytes 1..9).
            assert_eq!((x[0], &x[9..]), (y[0], &y[9..]));
        }
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_tb_path_that_is_a_file_is_an_error_naming_it() {
        let base = std::env::temp_dir().join(format!("mtf-tb-file-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        std::fs::write(base.join("tb"), b"x").unwrap();
        let e = EventWriter::create(&base.join("tb")).err().unwrap().to_string();
        assert!(e.contains("tb: exists and is not a directory"), "{e}");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
