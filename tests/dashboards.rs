//! The Grafana dashboards in `docs/grafana/`: each is JSON Grafana can import (unique panel
//! ids, panels that do not overlap, the datasource variable), and every query is PromQL that
//! Prometheus parses (`promtool check rules` on the queries as recording rules, with the
//! dashboard's variables filled in; required in CI). Which series the queries name is
//! checked against a live scrape elsewhere: `tools/smi/tests/exporter.rs` for the device
//! dashboard, `tests/serve.rs` for the training one.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn dashboards() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/grafana");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

/// Every panel's queries, with Grafana's variables replaced by values Prometheus accepts.
fn queries(dash: &Value) -> Vec<String> {
    dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .map(|t| {
            t["expr"]
                .as_str()
                .unwrap()
                .replace("$__rate_interval", "1m")
                .replace("$__interval", "15s")
                .replace("$instance", ".*")
        })
        .collect()
}

/// Runs `promtool check rules` on `exprs` as recording rules; its complaint, if any.
fn promtool_rejects(exprs: &[String], tag: &str) -> Option<String> {
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, e) in exprs.iter().enumerate() {
        // A YAML single-quoted scalar: quotes doubled, nothing else escaped.
        rules += &format!(
            "      - record: dashboard:query{i}\n        expr: '{}'\n",
            e.replace('\'', "''")
        );
    }
    let file = std::env::temp_dir().join(format!(
        "suanli-dashboard-{tag}-{}.rules.yml",
        std::process::id()
    ));
    std::fs::write(&file, rules).unwrap();
    let out = Command::new("promtool")
        .args(["check", "rules"])
        .arg(&file)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    (!out.status.success()).then(|| {
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
    })
}

fn have_promtool() -> bool {
    let have = Command::new("promtool").arg("--version").output().is_ok();
    assert!(
        have || std::env::var_os("CI").is_none(),
        "promtool missing: CI installs prometheus"
    );
    have
}

#[test]
fn every_dashboard_is_well_formed() {
    let all = dashboards();
    assert!(all.len() >= 2, "{all:?}");
    for path in all {
        let name = path.display();
        let dash: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            dash["uid"].is_string() && dash["title"].is_string(),
            "{name}"
        );
        let vars = dash["templating"]["list"].as_array().unwrap();
        assert!(
            vars.iter().any(|v| v["type"] == "datasource"),
            "{name}: no datasource variable"
        );
        let panels = dash["panels"].as_array().unwrap();
        let mut ids = Vec::new();
        let mut boxes: Vec<(u64, u64, u64, u64, String)> = Vec::new();
        for p in panels {
            let title = p["title"].as_str().unwrap().to_string();
            ids.push(p["id"].as_u64().unwrap());
            let g = &p["gridPos"];
            let [x, y, w, h] = ["x", "y", "w", "h"].map(|k| g[k].as_u64().unwrap());
            assert!(x + w <= 24, "{name}: {title} is wider than the grid");
            for (bx, by, bw, bh, other) in &boxes {
                let apart = x >= bx + bw || bx >= &(x + w) || y >= by + bh || by >= &(y + h);
                assert!(apart, "{name}: {title} overlaps {other}");
            }
            boxes.push((x, y, w, h, title.clone()));
            assert_eq!(
                p["datasource"]["uid"], "${datasource}",
                "{name}: {title} is tied to one datasource"
            );
            assert!(
                !p["targets"].as_array().unwrap().is_empty(),
                "{name}: {title} has no query"
            );
        }
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n, "{name}: panel ids repeat");
    }
}

#[test]
fn every_dashboard_query_parses_as_promql() {
    if !have_promtool() {
        return;
    }
    // The check itself: a query Prometheus cannot parse is caught.
    let bad = vec!["rate(suanli_up[1m]".to_string()];
    assert!(promtool_rejects(&bad, "planted").is_some());
    for path in dashboards() {
        let dash: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let exprs = queries(&dash);
        assert!(!exprs.is_empty());
        let tag = path.file_stem().unwrap().to_string_lossy().to_string();
        if let Some(why) = promtool_rejects(&exprs, &tag) {
            panic!("{}: a query does not parse:\n{why}", path.display());
        }
    }
}
