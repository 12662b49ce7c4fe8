//! Results of schema 2 (before each transport had a spec of its own): read
//! and converted to the current model, so that old run.json files still
//! load in `report`, `compare` and `table` (and schema 3's, whose
//! throughput was in MB/s and whose msgr bytes held the frame headers).
//! Schema 2 kept one `mode` for
//! every transport plus optional `shm` and `s3` sections, and warnings as
//! plain text.

use crate::result::Warning;
use crate::spec::{
    Arrival, ClientsAs, MsgrMode, MsgrSpec, S3Op, S3Spec, S3Workload, ShmMode, ShmSpec, SizeSpec,
    StopSpec, TargetSpec, TransportSpec, UrlStyle, Wait,
};
use crate::topo::CpuList;
use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Echo,
    Oneway,
    Stream,
    Rr,
    Sync,
    Async,
    Nores,
    Put,
    Get,
    Head,
    Delete,
    List,
    Mixed,
}

/// The transports schema 2 knew (any other name is not a schema-2 run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum KindV2 {
    Msgr,
    Shm,
    S3,
}

#[derive(Deserialize)]
struct ShmV2 {
    wait: Wait,
    channel: crate::spec::Channel,
    clients_as: ClientsAs,
    ring_bytes: u64,
}

#[derive(Deserialize)]
struct S3V2 {
    mix: Vec<(Mode, u32)>,
    objects: u64,
    sizes: SizeSpec,
    prefix: String,
    style: UrlStyle,
    region: String,
    multipart_threshold: u64,
    part_size: u64,
    put_parts: usize,
    get_parts: usize,
    keep: bool,
    signed: bool,
}

#[derive(Deserialize)]
struct RunSpecV2 {
    transport: KindV2,
    target: TargetSpec,
    mode: Mode,
    size_bytes: u64,
    response_size_bytes: u64,
    clients: usize,
    conns_per_client: usize,
    depth: usize,
    rate_per_s: Option<f64>,
    arrival: Arrival,
    stop: StopSpec,
    warmup_ns: u64,
    poll: bool,
    verify: bool,
    client_cpus: CpuList,
    max_frame_bytes: u64,
    #[serde(default)]
    shm: Option<ShmV2>,
    #[serde(default)]
    s3: Option<S3V2>,
    #[serde(default)]
    trace_sample: Option<u64>,
}

fn mismatch(what: &str, m: Mode) -> String {
    format!("schema 2 spec: mode {m:?} is not a mode of {what}")
}

fn s3_op(m: Mode) -> Result<S3Op, String> {
    Ok(match m {
        Mode::Get => S3Op::Get,
        Mode::Put => S3Op::Put,
        Mode::Head => S3Op::Head,
        Mode::Delete => S3Op::Delete,
        Mode::List => S3Op::List,
        m => return Err(mismatch("an S3 mix", m)),
    })
}

fn transport(v: &RunSpecV2) -> Result<TransportSpec, String> {
    Ok(match v.transport {
        KindV2::Msgr => MsgrSpec {
            mode: match v.mode {
                Mode::Echo => MsgrMode::Echo,
                Mode::Oneway => MsgrMode::Oneway,
                Mode::Stream => MsgrMode::Stream,
                Mode::Rr => MsgrMode::Rr,
                m => return Err(mismatch("msgr", m)),
            },
            size_bytes: v.size_bytes,
            response_size_bytes: v.response_size_bytes,
            max_frame_bytes: v.max_frame_bytes,
        }
        .into(),
        KindV2::Shm => {
            let s = v
                .shm
                .as_ref()
                .ok_or("schema 2 spec: shm run without its shm section")?;
            ShmSpec {
                mode: match v.mode {
                    Mode::Sync => ShmMode::Sync,
                    Mode::Async => ShmMode::Async,
                    Mode::Nores => ShmMode::Nores,
                    Mode::Stream => ShmMode::Stream,
                    m => return Err(mismatch("shm", m)),
                },
                size_bytes: v.size_bytes,
                wait: s.wait,
                channel: s.channel,
                clients_as: s.clients_as,
                ring_bytes: s.ring_bytes,
            }
            .into()
        }
        KindV2::S3 => {
            let s =
                v.s3.as_ref()
                    .ok_or("schema 2 spec: S3 run without its s3 section")?;
            S3Spec {
                workload: match v.mode {
                    Mode::Mixed => S3Workload::Mixed,
                    m => match s3_op(m)? {
                        S3Op::Get => S3Workload::Get,
                        S3Op::Put => S3Workload::Put,
                        S3Op::Head => S3Workload::Head,
                        S3Op::Delete => S3Workload::Delete,
                        S3Op::List => S3Workload::List,
                    },
                },
                mix: s
                    .mix
                    .iter()
                    .map(|(m, w)| Ok((s3_op(*m)?, *w)))
                    .collect::<Result<_, String>>()?,
                objects: s.objects,
                sizes: s.sizes.clone(),
                prefix: s.prefix.clone(),
                style: s.style,
                sign: crate::spec::S3Sign::Query,
                region: s.region.clone(),
                multipart_threshold: s.multipart_threshold,
                part_size: s.part_size,
                put_parts: s.put_parts,
                get_parts: s.get_parts,
                keep: s.keep,
                signed: s.signed,
                key_dist: crate::spec::KeyDist::Uniform,
            }
            .into()
        }
    })
}

/// Rewrites a schema-2 run.json document in the current schema.
pub fn upgrade_v2(doc: &mut serde_json::Value) -> Result<(), String> {
    let old: RunSpecV2 =
        serde_json::from_value(doc["spec"].clone()).map_err(|e| format!("spec: {e}"))?;
    let spec = crate::spec::RunSpec {
        transport: transport(&old)?,
        target: old.target,
        clients: old.clients,
        conns_per_client: old.conns_per_client,
        depth: old.depth,
        rate_per_s: old.rate_per_s,
        arrival: old.arrival,
        stop: old.stop,
        warmup_ns: old.warmup_ns,
        op_timeout_ns: 10_000_000_000,
        hiccup_threshold_ns: None,
        poll: old.poll,
        verify: old.verify,
        client_cpus: old.client_cpus,
        trace_sample: old.trace_sample,
        observe: None,
        server_env: Default::default(),
        also_target: vec![],
        agents: vec![],
        share: None,
        labels: Default::default(),
        stages: vec![],
    };
    doc["spec"] = serde_json::to_value(&spec).map_err(|e| e.to_string())?;
    let warnings: Vec<Warning> = doc["warnings"]
        .as_array()
        .map(|ws| {
            ws.iter()
                .filter_map(|w| w.as_str())
                .map(|m| Warning::Note {
                    message: m.to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    doc["warnings"] = serde_json::to_value(&warnings).map_err(|e| e.to_string())?;
    doc["schema_version"] = serde_json::Value::from(3);
    upgrade_v3(doc)
}

/// The bytes of a frame's header, where schema 3 counted them (msgr's
/// frames but rr's raw messages).
const MSGR_HEADER_BYTES: u64 = 16;

/// Schema 3 to 4: throughput in MB/s (10^6) becomes exact bytes/s and
/// MiB/s; msgr's counted bytes, which held the 16-byte frame headers,
/// become payload (the headers taken off, one per message sent and per
/// message received) and the wire bytes are kept beside them.
pub fn upgrade_v3(doc: &mut serde_json::Value) -> Result<(), String> {
    let framed =
        doc["spec"]["transport"]["kind"] == "msgr" && doc["spec"]["transport"]["mode"] != "rr";
    let u = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let s = &mut doc["summary"];
    if !s.is_object() {
        // Nothing to convert (reading it will say what is missing).
        doc["schema_version"] = serde_json::Value::from(crate::result::SCHEMA_VERSION);
        return Ok(());
    }
    if framed {
        let (out, inb) = (u(&s["bytes_out"]), u(&s["bytes_in"]));
        s["wire_bytes_out"] = out.into();
        s["wire_bytes_in"] = inb.into();
        s["bytes_out"] = out
            .saturating_sub(u(&s["messages_sent"]) * MSGR_HEADER_BYTES)
            .into();
        s["bytes_in"] = inb
            .saturating_sub(u(&s["messages_received"]) * MSGR_HEADER_BYTES)
            .into();
    }
    let secs = u(&s["measured_ns"]) as f64 / 1e9;
    for dir in ["out", "in"] {
        let bytes = u(&s[format!("bytes_{dir}").as_str()]) as f64;
        let per_s = if secs > 0.0 {
            bytes / secs
        } else {
            s[format!("mb_per_s_{dir}").as_str()]
                .as_f64()
                .unwrap_or(0.0)
                * 1e6
        };
        s[format!("bytes_per_s_{dir}").as_str()] = per_s.into();
        s[format!("mib_per_s_{dir}").as_str()] = crate::units::mib(per_s).into();
        if let Some(m) = s.as_object_mut() {
            m.remove(&format!("mb_per_s_{dir}"));
        }
    }
    if let Some(ops) = s.get_mut("by_op").and_then(|o| o.as_object_mut()) {
        for o in ops.values_mut() {
            let per_s = o["mb_per_s"].as_f64().unwrap_or(0.0) * 1e6;
            o["bytes_per_s"] = per_s.into();
            o["mib_per_s"] = crate::units::mib(per_s).into();
            if let Some(m) = o.as_object_mut() {
                m.remove("mb_per_s");
            }
        }
    }
    if framed && let Some(ivs) = doc.get_mut("intervals").and_then(|v| v.as_array_mut()) {
        for iv in ivs {
            let (sent, ops) = (u(&iv["sent"]), u(&iv["ops"]));
            iv["bytes_out"] = u(&iv["bytes_out"])
                .saturating_sub(sent * MSGR_HEADER_BYTES)
                .into();
            iv["bytes_in"] = u(&iv["bytes_in"])
                .saturating_sub(ops * MSGR_HEADER_BYTES)
                .into();
        }
    }
    doc["schema_version"] = serde_json::Value::from(crate::result::SCHEMA_VERSION);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run.json written by wirebench 0.1 at schema 2 (an S3 mixed run).
    const V2: &str = r#"{
      "schema_version": 2, "run_id": "20261123T101010Z-s3-mixed-1a2b",
      "command_line": ["wirebench", "run"], "started_at": "2026-11-23T10:10:10Z",
      "spec": {"transport": "s3", "target": {"kind": "embedded", "cpus": "1", "poll": false,
        "listen": "tcp://127.0.0.1:0"}, "mode": "mixed", "size_bytes": 4096,
        "response_size_bytes": 0, "clients": 1, "conns_per_client": 2, "depth": 1,
        "rate_per_s": null, "arrival": "uniform", "stop": {"durationns": 5000000000},
        "warmup_ns": 1000000000, "poll": false, "verify": false, "client_cpus": "0",
        "max_frame_bytes": 16777216, "s3": {"mix": [["get", 70], ["put", 30]],
        "objects": 100, "sizes": {"fixed": 4096}, "prefix": "wirebench/x/", "style": "path",
        "region": "us-east-1", "multipart_threshold": 67108864, "part_size": 16777216,
        "put_parts": 1, "get_parts": 1, "keep": false, "signed": true}},
      "warnings": ["debug build: figures are not representative"]
    }"#;

    #[test]
    fn a_schema_2_spec_becomes_a_transport_spec() {
        let mut doc: serde_json::Value = serde_json::from_str(V2).unwrap();
        upgrade_v2(&mut doc).unwrap();
        let spec: crate::spec::RunSpec = serde_json::from_value(doc["spec"].clone()).unwrap();
        let s3 = spec.s3().expect("an S3 spec");
        assert_eq!(s3.workload, S3Workload::Mixed);
        assert_eq!(s3.mix, vec![(S3Op::Get, 70), (S3Op::Put, 30)]);
        assert_eq!(spec.conns_per_client, 2);
        let w: Vec<Warning> = serde_json::from_value(doc["warnings"].clone()).unwrap();
        assert_eq!(
            w[0].to_string(),
            "debug build: figures are not representative"
        );
        assert_eq!(doc["schema_version"], 4);
    }

    #[test]
    fn issue_36_a_schema_3_msgr_run_gets_its_payload_and_wire_bytes_apart() {
        let r = crate::result::fixture::sample();
        let mut doc = serde_json::to_value(&r).unwrap();
        // As schema 3 wrote it: frames' bytes, headers included, in MB/s.
        doc["schema_version"] = 3.into();
        let s = &mut doc["summary"];
        s["messages_sent"] = 1000.into();
        s["messages_received"] = 1000.into();
        s["measured_ns"] = 2_000_000_000u64.into();
        s["bytes_out"] = (1000 * (4096 + 16)).into();
        s["bytes_in"] = (1000 * (4096 + 16)).into();
        s["mb_per_s_out"] = (1000.0 * 4112.0 / 2.0 / 1e6).into();
        s["mb_per_s_in"] = (1000.0 * 4112.0 / 2.0 / 1e6).into();
        for k in [
            "bytes_per_s_out",
            "bytes_per_s_in",
            "mib_per_s_out",
            "mib_per_s_in",
        ] {
            s.as_object_mut().unwrap().remove(k);
        }
        assert_eq!(doc["spec"]["transport"]["kind"], "msgr");
        upgrade_v3(&mut doc).unwrap();
        let r: crate::result::RunResult = serde_json::from_value(doc).unwrap();
        let s = &r.summary;
        assert_eq!((s.bytes_out, s.bytes_in), (4_096_000, 4_096_000));
        assert_eq!(
            (s.wire_bytes_out, s.wire_bytes_in),
            (Some(4_112_000), Some(4_112_000))
        );
        assert_eq!(s.bytes_per_s_out, 2_048_000.0);
        assert_eq!(s.mib_per_s_out, 2_048_000.0 / 1_048_576.0);
    }

    #[test]
    fn a_mode_of_another_transport_is_refused() {
        let mut doc: serde_json::Value =
            serde_json::from_str(&V2.replace("\"mode\": \"mixed\"", "\"mode\": \"echo\"")).unwrap();
        let e = upgrade_v2(&mut doc).unwrap_err();
        assert!(e.contains("Echo"), "{e}");
    }
}
