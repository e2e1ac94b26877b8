//! A short run of the server load benchmark (`src/bin/server_load`): a netproto server
//! and a renet server, each in its own process, under 20 sealed clients from a load
//! generator process, over loopback UDP for about two seconds each. It checks that the
//! benchmark runs end to end and that every reliable event was delivered once and in
//! order; it asserts nothing about time (the figures are printed, not judged).

use std::process::Command;

#[test]
fn the_load_benchmark_runs_and_delivers_every_event() {
    let json = std::env::temp_dir().join(format!("server_load_smoke_{}.json", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_server_load"))
        .args([
            "--clients",
            "20",
            "--seconds",
            "1",
            "--warmup",
            "0.5",
            "--drain",
            "20",
        ])
        .args(["--stacks", "netproto,renet", "--json"])
        .arg(&json)
        .output()
        .expect("the benchmark binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}\n{stderr}");
    assert!(
        output.status.success(),
        "the benchmark failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("result: PASS"), "{stdout}");

    let text = std::fs::read_to_string(&json).expect("the benchmark wrote its reports");
    let _ = std::fs::remove_file(&json);
    let reports: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let reports = reports.as_array().expect("one report per run");
    assert_eq!(reports.len(), 2, "netproto and renet");
    for report in reports {
        let (server, load) = (&report["server"], &report["load"]);
        let stack = server["stack"].as_str().unwrap_or("?");
        assert_eq!(
            server["connected_max"], 20,
            "{stack}: every client connected"
        );
        assert!(
            server["window"]["ticks"].as_u64().unwrap_or(0) > 0,
            "{stack}: the server ticked"
        );
        assert!(
            load["events_sent"].as_u64().unwrap_or(0) > 0,
            "{stack}: events were sent"
        );
        assert_eq!(load["events_missing"], 0, "{stack}: no event lost");
        assert_eq!(
            load["events_wrong"], 0,
            "{stack}: none twice or out of order"
        );
        assert_eq!(
            load["events_received"], load["events_expected"],
            "{stack}: each event reached the other 9 clients of its match"
        );
        assert_eq!(
            server["total_app"]["events_in"], load["events_sent"],
            "{stack}: the server got every event"
        );
    }
}
