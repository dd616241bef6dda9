//! The real detector through the built binary: a scan's completion and a restore queue the
//! face walk, `walk faces --wait` stores the astronaut's one face and none for the rocket,
//! `faces redetect ASSET` does one picture again, and an unknown asset is a usage error.

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::Value;
use std::path::Path;

fn mediadex(data: &Path, args: &[&str]) -> std::process::Output {
    let mut c = cargo_bin_cmd!("mediadex");
    c.env_remove("MEDIADEX_DATA")
        .env_remove("MEDIADEX_FACE_SCHEME")
        .env("RUST_LOG", "warn")
        .arg("--data")
        .arg(data)
        .args(args);
    c.output().expect("run mediadex")
}

fn ok_json(data: &Path, args: &[&str]) -> Value {
    let out = mediadex(data, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    serde_json::from_slice(&out.stdout).expect("one JSON value")
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The asset whose first path is `name`.
fn asset_named<'a>(assets: &'a Value, name: &str) -> &'a Value {
    let list = assets.as_array().expect("array");
    list.iter()
        .find(|a| a["paths"][0] == name)
        .unwrap_or_else(|| panic!("no asset {name} in {assets}"))
}

#[test]
fn the_face_walk_and_redetect_store_the_real_detectors_faces() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (data, lib) = (tmp.path().join("data"), tmp.path().join("lib"));
    std::fs::create_dir_all(&lib).expect("mkdir");
    for name in ["astronaut.png", "rocket.jpg"] {
        std::fs::copy(fixture(name), lib.join(name)).expect("copy");
    }
    let lib_arg = lib.to_string_lossy().into_owned();
    ok_json(&data, &["library", "add", &lib_arg, "--json"]);
    ok_json(&data, &["scan", "--wait", "--json"]);
    // The scan's completion queued the face walk for its new assets.
    let status = ok_json(&data, &["status", "--json"]);
    assert_eq!(
        status["walks"]["faces"]["chain"]["state"], "queued",
        "{status}"
    );

    let walk = ok_json(&data, &["walk", "faces", "--wait", "--json"]);
    assert_eq!(walk["scheme"], mediadex::faces::SCHEME);
    let assets = ok_json(&data, &["assets", "--json"]);
    let astronaut = asset_named(&assets, "astronaut.png");
    let faces = astronaut["faces"].as_array().expect("faces");
    assert_eq!(faces.len(), 1, "{astronaut}");
    let x = faces[0]["x"].as_f64().expect("x");
    assert!((170.0..190.0).contains(&x), "{astronaut}");
    let rocket = asset_named(&assets, "rocket.jpg");
    assert_eq!(rocket["faces"], Value::Array(vec![]), "{rocket}");

    let id = astronaut["id"].as_i64().expect("id").to_string();
    let again = ok_json(&data, &["faces", "redetect", &id, "--json"]);
    assert_eq!(again["faces"], astronaut["faces"]);

    // A restore queues the face walk again (the asset may have missed it while trashed).
    ok_json(&data, &["trash", &id, "--json"]);
    let status = ok_json(&data, &["status", "--json"]);
    assert_eq!(status["walks"]["faces"]["chain"], Value::Null, "{status}");
    ok_json(&data, &["restore", &id, "--json"]);
    let status = ok_json(&data, &["status", "--json"]);
    assert_eq!(
        status["walks"]["faces"]["chain"]["state"], "queued",
        "{status}"
    );

    let out = mediadex(&data, &["faces", "redetect", "9999"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no asset 9999"), "{stderr}");
}
