//! The runtime's manifest checks, payload framing and protocol, by hand.

use super::*;

fn fixed_manifest() -> Manifest {
    Manifest {
        version: VERSION,
        kind: "fixed".into(),
        action: "threshold".into(),
        value_scale: 1.0,
        agents: vec![0],
        m: 2,
        levels: vec![0.0, 0.5, 0.9],
        hidden: 0,
        inputs: Vec::new(),
        agents_total: 0,
        by_type: 0,
        types: Vec::new(),
        world: None,
        weights: Vec::new(),
        total_tokens: 100.0,
        states: 0,
        fixed_level: 1,
        model_bytes: 0,
        training_run: "r".into(),
        config_hash: fnv_hex(b"x"),
    }
}

#[test]
fn world_manifests_are_checked() {
    let shape = WorldShape {
        name: "bandit".into(),
        features: vec!["group".into(), "time".into()],
        groups: vec!["low".into(), "high".into()],
        per_agent: 0,
    };
    let ok = Manifest {
        kind: "actor_critic".into(),
        hidden: 3,
        m: 0,
        agents: vec![0, 1],
        world: Some(shape.clone()),
        ..fixed_manifest()
    };
    assert_eq!(ok.validate(), Ok(()));
    let by_agent = Manifest {
        agents: vec![0, 2],
        world: Some(WorldShape {
            per_agent: 3,
            ..shape.clone()
        }),
        ..ok.clone()
    };
    assert_eq!(by_agent.validate(), Ok(()));
    assert_eq!(ok.input_len(), 2);
    assert_eq!(ok.per_agent(), 2 * 3 + 3 + 3 * 3 + 3);
    for (m, says) in [
        (Manifest { version: 8, ..ok.clone() }, "needs manifest version 9"),
        (
            Manifest {
                agents: vec![2],
                ..ok.clone()
            },
            "holds groups among 0..2",
        ),
        // An actor per agent of a world of 3: ids beyond it are refused, 2 is not a group.
        (
            Manifest {
                agents: vec![0, 3],
                world: Some(WorldShape {
                    per_agent: 3,
                    ..shape.clone()
                }),
                ..ok.clone()
            },
            "holds agents among 0..3",
        ),
        (
            Manifest {
                inputs: vec!["burst".into()],
                ..ok.clone()
            },
            "nothing else",
        ),
        (
            Manifest {
                world: Some(WorldShape {
                    features: Vec::new(),
                    ..shape.clone()
                }),
                ..ok.clone()
            },
            "0 features",
        ),
        (
            Manifest {
                kind: "hedge".into(),
                states: 3,
                total_tokens: 1.0,
                ..ok.clone()
            },
            "is hedge",
        ),
    ] {
        let e = m.validate().unwrap_err();
        assert!(e.contains(says), "{e}");
    }
    // A zero network answers uniformly: argmax is the first level, here a threshold.
    let w = vec![0.0f32; 2 * ok.per_agent()];
    let agent = Agent::new(&ok, &w, 1);
    let reply: serde_json::Value = serde_json::from_str(&agent.answer("{\"world\": [1, 0.25]}", None)).unwrap();
    assert_eq!(reply["threshold"], 0.0, "{reply}");
    assert_eq!(reply["probabilities"].as_array().unwrap().len(), 3, "{reply}");
    for (line, says) in [
        ("{\"world\": [1]}", "`world` has 1 entries, expected 2"),
        ("{\"world\": [1, 1e300]}", "`world`[1] is 1e300, expected a finite number"),
        ("{\"budget\": 0.5, \"utilities\": []}", "`world` is missing"),
    ] {
        let reply = agent.answer(line, None);
        assert!(reply.contains(says), "{line}: {reply}");
    }
    let bid = Manifest {
        action: "bid".into(),
        levels: vec![0.5, 1.0],
        ..ok.clone()
    };
    let w = vec![0.0f32; bid.per_agent()];
    let reply = Agent::new(&bid, &w, 0).answer("{\"world\": [0, 0]}", None);
    assert!(reply.contains("\"bid_factor\":0.5") && !reply.contains("bids"), "{reply}");
}

#[test]
fn onnx_manifests_and_payloads_are_checked() {
    let ok = Manifest {
        kind: "onnx".into(),
        model_bytes: 5,
        ..fixed_manifest()
    };
    assert_eq!(ok.validate(), Ok(()));
    assert_eq!(ok.per_agent(), 0);
    for (m, says) in [
        (Manifest { version: 7, ..ok.clone() }, "needs manifest version 8"),
        (
            Manifest {
                model_bytes: 0,
                ..ok.clone()
            },
            "0 bytes",
        ),
        (
            Manifest {
                agents: vec![0, 1],
                ..ok.clone()
            },
            "2 agents",
        ),
        (
            Manifest {
                kind: "fixed".into(),
                ..ok.clone()
            },
            "carries no model",
        ),
    ] {
        let e = m.validate().unwrap_err();
        assert!(e.contains(says), "{e}");
    }
    // The model's 5 bytes come back exactly, without the padding.
    let back = read_payload(&append_model(b"runtime", &ok, b"model")).unwrap();
    assert_eq!(
        (back.manifest, back.model, back.weights),
        (ok.clone(), b"model".to_vec(), Vec::new())
    );
    // A manifest whose length disagrees with the bytes it carries is refused.
    let long = Manifest { model_bytes: 9, ..ok };
    let e = read_payload(&append_model(b"runtime", &long, b"model")).unwrap_err();
    assert!(e.contains("holds 8 bytes, the manifest's model 9"), "{e}");
}

#[test]
fn by_type_manifests_are_checked() {
    let ok = Manifest {
        kind: "actor_critic".into(),
        hidden: 4,
        agents: vec![0, 1],
        inputs: vec!["weight".into(), "by_type".into()],
        by_type: 2 + 3 * 2 + 1,
        types: vec!["a".into(), "b".into()],
        weights: vec![1.0, 2.0],
        ..fixed_manifest()
    };
    assert_eq!(ok.validate(), Ok(()));
    assert_eq!(ok.input_len(), 9);
    let bad = |m: Manifest, says: &str| {
        let e = m.validate().unwrap_err();
        assert!(e.contains(says), "{e}");
    };
    bad(Manifest { version: 5, ..ok.clone() }, "needs manifest version 6");
    bad(Manifest { by_type: 8, ..ok.clone() }, "a block of 2 + 3 x types");
    bad(
        Manifest {
            inputs: vec!["by_type".into(), "weight".into()],
            ..ok.clone()
        },
        "out of order",
    );
    bad(
        Manifest {
            weights: vec![1.0],
            ..ok.clone()
        },
        "a weight > 0 per agent",
    );
    bad(
        Manifest {
            types: Vec::new(),
            ..ok.clone()
        },
        "0 types",
    );
}

#[test]
fn payload_round_trips_and_damage_is_reported() {
    let m = fixed_manifest();
    let exe = append_payload(b"\x7fELF runtime", &m, &[1.0]);
    let back = read_payload(&exe).unwrap();
    assert_eq!((back.manifest, back.weights), (m.clone(), vec![1.0]));
    // A constant policy's level index must be one of its levels.
    for bad in [3.0f32, 0.5, -1.0] {
        let e = read_payload(&append_payload(b"r", &m, &[bad])).unwrap_err();
        assert!(e.contains("is not one of its 3 levels"), "{bad}: {e}");
    }
    // Version 4 carried the level in the manifest alone.
    let old = Manifest { version: 4, ..m.clone() };
    let old = read_payload(&append_payload(b"r", &old, &[])).unwrap();
    assert_eq!(
        Agent::new(&old.manifest, &old.weights, 0).probabilities(&[0.2, 0.1, 0.9]),
        [0.0, 1.0, 0.0]
    );
    assert!(read_payload(b"\x7fELF runtime").unwrap_err().contains("carries no policy"));
    let mut bad = exe.clone();
    let n = bad.len();
    bad[n - FOOTER] = 0xff;
    assert!(read_payload(&bad).is_err());
}

fn hedge_exe(tamper: impl Fn(&mut Manifest, &mut Vec<f32>)) -> Vec<u8> {
    let mut m = fixed_manifest();
    m.kind = "hedge".into();
    m.states = 2;
    let mut w = vec![0.5f32; 6];
    tamper(&mut m, &mut w);
    append_payload(b"runtime", &m, &w)
}

#[test]
fn flipped_weight_byte_silently_changed_decisions() {
    let exe = hedge_exe(|_, _| {});
    read_payload(&exe).unwrap();
    let mut bad = exe.clone();
    bad[exe.len() - FOOTER - 3] ^= 0x10;
    assert!(read_payload(&bad).unwrap_err().contains("checksum mismatch"));
}

#[test]
fn nan_weights_and_bad_manifests_were_served() {
    assert!(read_payload(&hedge_exe(|_, w| w[2] = f32::NAN))
        .unwrap_err()
        .contains("number 2 is NaN"));
    assert!(read_payload(&hedge_exe(|m, _| m.levels[1] = 1.5))
        .unwrap_err()
        .contains("level 1.5 is outside [0, 1]"));
    assert!(read_payload(&hedge_exe(|m, _| m.version = VERSION + 1))
        .unwrap_err()
        .contains(&format!("manifest version {}", VERSION + 1)));
    assert!(read_payload(&hedge_exe(|m, _| m.kind = "oracle".into()))
        .unwrap_err()
        .contains("unknown policy kind"));
    // Inputs: known names in the observation's order; budgets need their count.
    assert!(read_payload(&hedge_exe(|m, _| m.inputs = vec!["weight".into(), "backlog".into()]))
        .unwrap_err()
        .contains("input `backlog` is unknown or out of order"));
    assert!(read_payload(&hedge_exe(|m, _| m.inputs = vec!["queue".into()]))
        .unwrap_err()
        .contains("input `queue` is unknown"));
    assert!(read_payload(&hedge_exe(|m, _| m.inputs = vec!["backlog".into(), "budgets".into()]))
        .unwrap_err()
        .contains("agents_total in [1, 2^20], not 0"));
    read_payload(&hedge_exe(|m, _| m.inputs = vec!["backlog".into(), "weight".into()])).unwrap();
    // Files exported before inputs existed (version 2) read SPEC 4's state.
    let v2 = read_payload(&hedge_exe(|m, _| m.version = 2)).unwrap().manifest;
    assert!(v2.inputs.is_empty());
}

#[test]
fn footer_length_of_2_pow_64_minus_1_panicked() {
    let mut exe = hedge_exe(|_, _| {});
    let n = exe.len();
    exe[n - FOOTER..n - FOOTER + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(read_payload(&exe).unwrap_err().contains("lengths do not fit"));
    exe[n - FOOTER..n - FOOTER + 8].copy_from_slice(&8u64.to_le_bytes());
    exe[n - FOOTER + 8..n - FOOTER + 16].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
    assert!(read_payload(&exe).unwrap_err().contains("lengths do not fit"));
}

#[test]
fn a_manifest_whose_sizes_wrap_past_2_pow_64_panicked() {
    // Hedge: states x levels saturates, times 2 agents wraps.
    let exe = hedge_exe(|m, _| {
        m.states = usize::MAX / 2;
        m.agents = vec![0, 1];
        m.agents_total = 2;
    });
    let err = read_payload(&exe).unwrap_err();
    assert!(err.contains("overflow") || err.contains("invalid"), "{err}");
}

#[test]
fn an_endless_line_was_buffered_whole() {
    use std::io::BufReader;
    // 3 MiB without a newline, then a short line: the long one is cut at the limit, the
    // next read starts at the short one (a reader with a small buffer, as a pipe's).
    let mut input = vec![b'x'; 3 << 20];
    input.extend_from_slice(b"\nshort\nlast");
    let mut r = BufReader::with_capacity(4096, input.as_slice());
    let mut buf = Vec::new();
    assert_eq!(read_line(&mut r, &mut buf, MAX_LINE, true).unwrap(), LineRead::TooLong);
    assert_eq!(buf.len(), MAX_LINE);
    assert_eq!(read_line(&mut r, &mut buf, MAX_LINE, true).unwrap(), LineRead::Line);
    assert_eq!(buf, b"short");
    assert_eq!(read_line(&mut r, &mut buf, MAX_LINE, true).unwrap(), LineRead::Line);
    assert_eq!(buf, b"last");
    assert_eq!(read_line(&mut r, &mut buf, MAX_LINE, true).unwrap(), LineRead::End);
    // Exactly the limit is a line.
    let mut r = BufReader::with_capacity(7, &b"abcde\nabcdef\n"[..]);
    assert_eq!(read_line(&mut r, &mut buf, 5, true).unwrap(), LineRead::Line);
    assert_eq!(read_line(&mut r, &mut buf, 5, true).unwrap(), LineRead::TooLong);
    assert_eq!(buf, b"abcde");
    // Without skip, an endless line is reported at the limit, without reading on.
    let mut endless = std::io::repeat(b'x');
    let mut r = BufReader::with_capacity(4096, &mut endless);
    assert_eq!(read_line(&mut r, &mut buf, MAX_LINE, false).unwrap(), LineRead::TooLong);
    assert_eq!(buf.len(), MAX_LINE);
}

#[test]
fn a_hedge_agent_landed_one_budget_state_low() {
    // The issue's case: the share sent as f32 put floor(share * T) one state low for 50 of
    // the 101 whole-token budgets at T = 100. With `tokens` every state is exact; from the
    // share alone (f64, as mtf-agent's users send it) too.
    let t = 100.0;
    let low_f32 = (0..=100)
        .filter(|&b| ((f64::from((b as f64 / t) as f32) * t).floor() as i64) < b)
        .count();
    assert!(low_f32 > 0, "the f32 round trip loses a state somewhere");
    for b in 0..=100 {
        let b = b as f64;
        assert_eq!(budget_floor(b / t, Some(b), t), b);
        assert_eq!(budget_floor(b / t, None, t), b, "B = {b}");
        assert_eq!(budget_floor((b + 0.5) / t, Some(b + 0.5), t), b);
    }
    for t in [3.0, 7.0, 49.0, 1000.0, 12345.0] {
        for b in 0..=(t as i64) {
            let b = b as f64;
            assert_eq!(budget_floor(b / t, None, t), b, "B = {b}, T = {t}");
        }
    }
    // A line with tokens out of range is an error object.
    let exe = hedge_exe(|_, _| {});
    let crate::export::runtime::Payload { manifest, weights, .. } = read_payload(&exe).unwrap();
    let a = Agent::new(&manifest, &weights, 0);
    let m = manifest.m;
    let line = |tokens: &str| format!(r#"{{"budget": 0.5, "utilities": {:?}, "tokens": {tokens}}}"#, vec![0.5; m]);
    assert!(a.answer(&line("-1"), None).contains("`tokens` is -1"));
    assert!(a.answer(&line("1e300"), None).contains("expected a budget in [0, 1e12]"));
    assert!(a.answer(&line("3"), None).contains("threshold"));
}

#[test]
fn protocol_errors_name_the_problem() {
    let m = fixed_manifest();
    let a = Agent::new(&m, &[1.0], 0);
    assert_eq!(
        a.answer(r#"{"budget": 0.2, "utilities": [0.1, 0.9]}"#, None),
        r#"{"probabilities":[0.0,1.0,0.0],"threshold":0.5}"#
    );
    assert!(a.answer("{", None).contains("bad JSON"));
    assert!(a
        .answer(r#"{"budget": 0.2, "utilities": [0.1]}"#, None)
        .contains("`utilities` has 1 entries, expected 2"));
    assert!(a
        .answer(r#"{"budget": 0.2, "utilities": [0.1, 7]}"#, None)
        .contains("`utilities`[1] is 7"));
    assert!(a
        .answer(r#"{"budget": -1, "utilities": [0.1, 0.2]}"#, None)
        .contains("`budget` is -1"));
    // Finite but extreme inputs used to be answered with NaN probabilities.
    assert!(a
        .answer(r#"{"budget": 1e308, "utilities": [0.1, 0.2]}"#, None)
        .contains("expected a share B/T in [0, 1]"));
    assert!(a
        .answer(r#"{"budget": 0.1, "utilities": [0.1, 0.2], "x": 1}"#, None)
        .contains("unknown field"));
}
