//! Where the shards may run: `--node-selector` and `--toleration`, written as kubectl writes
//! labels and taints (`kubectl label node N key=value`, `kubectl taint node N key=value:Effect`),
//! so the flags repeat what the operator typed when making the node pool.

use std::collections::BTreeMap;

use super::api::Toleration;
use super::names::{is_label_value, is_qualified_name};

const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// `key=value` pairs, each key once.
pub fn node_selector(given: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for s in given {
        let Some((key, value)) = s.split_once('=') else {
            return Err(format!(
                "--node-selector `{s}` is not key=value: write e.g. `pool=loaders`"
            ));
        };
        key_value("--node-selector", s, key, value)?;
        if out.insert(key.to_string(), value.to_string()).is_some() {
            return Err(format!(
                "--node-selector names `{key}` twice: a node has one value per label"
            ));
        }
    }
    Ok(out)
}

/// `key=value:Effect` tolerates that taint (operator `Equal`); `key:Effect` tolerates the key
/// with any value (operator `Exists`).
pub fn toleration(s: &str) -> Result<Toleration, String> {
    let Some((taint, effect)) = s.rsplit_once(':') else {
        return Err(format!(
            "--toleration `{s}` names no effect: write key=value:Effect or key:Effect, the \
             effect one of {}",
            EFFECTS.join(", ")
        ));
    };
    let Some(&effect) = EFFECTS.iter().find(|e| **e == effect) else {
        return Err(format!(
            "--toleration `{s}`: `{effect}` is not a taint effect: one of {}",
            EFFECTS.join(", ")
        ));
    };
    let (key, value) = match taint.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (taint, None),
    };
    key_value("--toleration", s, key, value.unwrap_or(""))?;
    Ok(Toleration {
        key: key.to_string(),
        operator: if value.is_some() { "Equal" } else { "Exists" },
        value: value.map(str::to_string),
        effect,
    })
}

fn key_value(flag: &str, s: &str, key: &str, value: &str) -> Result<(), String> {
    if !is_qualified_name(key) {
        return Err(format!(
            "{flag} `{s}`: `{key}` is not a label key: an optional DNS prefix and `/`, then \
             at most 63 letters, digits, `-`, `_` or `.`, starting and ending with a letter or \
             digit"
        ));
    }
    if !is_label_value(value) {
        return Err(format!(
            "{flag} `{s}`: `{value}` is not a label value: at most 63 letters, digits, `-`, \
             `_` or `.`, starting and ending with a letter or digit"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerations_read_kubectls_taint_syntax() {
        assert_eq!(
            toleration("dedicated=loaders:NoSchedule"),
            Ok(Toleration {
                key: "dedicated".into(),
                operator: "Equal",
                value: Some("loaders".into()),
                effect: "NoSchedule",
            })
        );
        assert_eq!(
            toleration("example.com/bench:NoExecute"),
            Ok(Toleration {
                key: "example.com/bench".into(),
                operator: "Exists",
                value: None,
                effect: "NoExecute",
            })
        );
        // An empty value is a value: the taint `key=:Effect`.
        assert_eq!(toleration("k=:PreferNoSchedule").unwrap().operator, "Equal");
        for (bad, says) in [
            ("dedicated=loaders", "names no effect"),
            ("dedicated:NoSchedul", "not a taint effect"),
            ("ded icated:NoSchedule", "not a label key"),
            ("k=a b:NoSchedule", "not a label value"),
            (":NoSchedule", "not a label key"),
        ] {
            let err = toleration(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
            assert!(err.starts_with(&format!("--toleration `{bad}`")), "{err}");
        }
    }

    #[test]
    fn node_selectors_are_labels() {
        let got = node_selector(&["pool=loaders".into(), "kubernetes.io/arch=amd64".into()]);
        assert_eq!(
            got.unwrap().into_iter().collect::<Vec<_>>(),
            [
                ("kubernetes.io/arch".to_string(), "amd64".to_string()),
                ("pool".to_string(), "loaders".to_string())
            ]
        );
        for bad in ["pool", "pool=a=b", "=x", "Pool!=x"] {
            assert!(node_selector(&[bad.into()]).is_err(), "{bad}");
        }
        let err = node_selector(&["a=1".into(), "a=2".into()]).unwrap_err();
        assert!(err.contains("twice"), "{err}");
    }
}
