//! The names and values Kubernetes checks on admission, checked here first so that a mistake
//! is a message from wlrun before anything is applied, not a half-created set of objects.

use std::path::Path;

/// Kubernetes' longest DNS label.
const LABEL_MAX: usize = 63;

/// The name every object gets. It must be a DNS-1035 label (the Service's rule: lowercase
/// letters, digits and `-`, starting with a letter and ending with a letter or digit), and
/// leave room for the pods' host names, `<name>-<index>`, which are labels too.
pub fn object_name(given: Option<&str>, file: &Path, shards: u32) -> Result<String, String> {
    let room = LABEL_MAX - 1 - (shards - 1).to_string().len();
    match given {
        Some(name) => {
            if !is_dns1035_label(name) {
                return Err(format!(
                    "--name `{name}` is not a DNS label: lowercase letters, digits and `-`, \
                     starting with a letter and ending with a letter or digit"
                ));
            }
            if name.len() > room {
                return Err(format!(
                    "--name `{name}` is {} characters: with {shards} shards the pods' host names \
                     (`{name}-{}`) must fit in {LABEL_MAX}, so at most {room}",
                    name.len(),
                    shards - 1
                ));
            }
            Ok(name.to_string())
        }
        None => Ok(from_stem(file, room)),
    }
}

/// `TSBS_cpu.only.wl` -> `tsbs-cpu-only`: lowercased, runs of other characters made one `-`,
/// `wl-` before a leading digit, cut to `room`.
fn from_stem(file: &Path, room: usize) -> String {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let mut name = String::new();
    for c in stem.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            name.push(c);
        } else if !name.ends_with('-') && !name.is_empty() {
            name.push('-');
        }
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "wl-");
    }
    if name.is_empty() {
        name.push_str("wlrun");
    }
    name.truncate(room);
    while name.ends_with('-') {
        name.pop();
    }
    name
}

pub fn is_dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= LABEL_MAX
        && b[0].is_ascii_lowercase()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// A namespace or a claim's name: a DNS-1123 label (namespaces) or subdomain (claims); the
/// label is the stricter, and claims named like labels are the common case.
pub fn check_label(what: &str, s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= LABEL_MAX
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} `{s}` is not a DNS label: lowercase letters, digits and `-`, at most \
             {LABEL_MAX}, starting and ending with a letter or digit"
        ))
    }
}

/// A resource quantity as the API parses it: a decimal number and an optional suffix
/// (`m`, `k`, `M` ... `E`, `Ki` ... `Ei`, or an exponent `e3`).
pub fn check_quantity(flag: &str, s: &str) -> Result<(), String> {
    match quantity_value(s) {
        Some(_) => Ok(()),
        None => Err(format!(
            "--{flag} `{s}` is not a Kubernetes quantity: write e.g. `2`, `1500m`, `1Gi`"
        )),
    }
}

/// A quantity's value in its base unit (cores, bytes), to compare a limit with a request.
pub fn quantity_value(s: &str) -> Option<f64> {
    let digits_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(digits_end);
    let number = !num.is_empty()
        && num.chars().filter(|&c| c == '.').count() <= 1
        && num.chars().any(|c| c.is_ascii_digit());
    if !number {
        return None;
    }
    let n: f64 = num.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e => {
            let exp = e.strip_prefix(['e', 'E'])?;
            if exp.is_empty() || !exp.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            10f64.powi(exp.parse::<i32>().ok()?)
        }
    };
    Some(n * scale)
}

/// A DNS-1123 subdomain: what the API requires of a Secret's or a ServiceAccount's name.
pub fn check_subdomain(flag: &str, s: &str) -> Result<(), String> {
    if is_dns1123_subdomain(s) {
        Ok(())
    } else {
        Err(format!(
            "{flag} `{s}` is not a DNS subdomain: lowercase letters, digits, `-` and `.`, at \
             most 253, starting and ending with a letter or digit"
        ))
    }
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

/// A label's or a taint's key: an optional DNS subdomain and `/`, then a name of at most 63
/// characters, alphanumeric at both ends, with `-`, `_` and `.` inside.
pub fn is_qualified_name(s: &str) -> bool {
    let (prefix, name) = match s.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    prefix.is_none_or(is_dns1123_subdomain) && !name.is_empty() && is_label_value(name)
}

/// A label's or a taint's value: empty, or at most 63 characters, alphanumeric at both ends,
/// with `-`, `_` and `.` inside.
pub fn is_label_value(s: &str) -> bool {
    let b = s.as_bytes();
    b.is_empty()
        || (b.len() <= LABEL_MAX
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')))
}

/// A ConfigMap or Secret key for a file's path: the API allows `[-._a-zA-Z0-9]`, at most 253,
/// and no leading `..`. `/` becomes `_`, as does any other character; a key already taken
/// gets `-2`, `-3`, ... (the order of files is fixed, so the keys are too).
pub fn file_key(path: &str, taken: &mut std::collections::HashSet<String>) -> String {
    let mut key: String = path
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if key.starts_with("..") {
        key.insert(0, '_');
    }
    // Keep the end, which names the file.
    const MAX: usize = 240;
    if key.len() > MAX {
        key = key[key.len() - MAX..].to_string();
    }
    let mut unique = key.clone();
    let mut n = 2;
    while !taken.insert(unique.clone()) {
        unique = format!("{key}-{n}");
        n += 1;
    }
    unique
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_stem_as_dns_labels() {
        let name = |f: &str| object_name(None, Path::new(f), 4).unwrap();
        assert_eq!(name("workloads/questdb-ingest.wl"), "questdb-ingest");
        assert_eq!(name("TSBS_cpu.only.wl"), "tsbs-cpu-only");
        assert_eq!(name("2024 run.wl"), "wl-2024-run");
        assert_eq!(name("___.wl"), "wlrun");
        let long = format!("{}.wl", "a".repeat(80));
        // 63 - "-3".len()
        assert_eq!(name(&long).len(), 61);
        assert!(is_dns1035_label(&name("x--y_.wl")));
    }

    #[test]
    fn a_given_name_must_be_a_label_with_room_for_the_index() {
        let f = Path::new("w.wl");
        assert!(object_name(Some("bench-1"), f, 16).is_ok());
        for bad in ["Bench", "1bench", "bench-", "be_nch", ""] {
            assert!(object_name(Some(bad), f, 2).is_err(), "{bad}");
        }
        let sixty = "a".repeat(60);
        assert!(object_name(Some(&sixty), f, 100).is_ok());
        let err = object_name(Some(&sixty), f, 101).unwrap_err();
        assert!(err.contains("at most 59"), "{err}");
    }

    #[test]
    fn quantities_are_checked_as_the_api_parses_them() {
        for ok in ["1", "1500m", "0.5", "1Gi", "512Mi", "2e3", "100k"] {
            assert!(check_quantity("cpu", ok).is_ok(), "{ok}");
        }
        for bad in ["", "1 Gi", "1GB", "Gi", "1..2", "-1", "1e"] {
            assert!(check_quantity("memory", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn quantities_compare_in_their_base_unit() {
        assert_eq!(quantity_value("1Gi"), Some(1024.0 * 1024.0 * 1024.0));
        assert_eq!(quantity_value("1500m"), Some(1.5));
        assert_eq!(quantity_value("2e3"), Some(2000.0));
        assert!(quantity_value("512Mi") < quantity_value("1Gi"));
        assert!(quantity_value("1G") < quantity_value("1Gi"));
    }

    #[test]
    fn keys_values_and_subdomains_follow_the_api() {
        for ok in [
            "pool",
            "cloud.google.com/gke-nodepool",
            "node-role.kubernetes.io/loader",
        ] {
            assert!(is_qualified_name(ok), "{ok}");
        }
        for bad in [
            "",
            "/pool",
            "Example.com/pool",
            "pool-",
            "a/b/c",
            &"k".repeat(64),
        ] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
        for ok in ["", "loaders", "Bench_1.x"] {
            assert!(is_label_value(ok), "{ok}");
        }
        for bad in ["-x", "a b", "x=y"] {
            assert!(!is_label_value(bad), "{bad}");
        }
        assert!(check_subdomain("--image-pull-secret", "regcred.bench").is_ok());
        assert!(check_subdomain("--service-account", "Bench").is_err());
        assert!(check_subdomain("--service-account", "a..b").is_err());
    }

    #[test]
    fn file_keys_are_valid_and_distinct() {
        let mut taken = Default::default();
        assert_eq!(
            file_key("workloads/data/p.csv", &mut taken),
            "workloads_data_p.csv"
        );
        assert_eq!(
            file_key("workloads_data/p.csv", &mut taken),
            "workloads_data_p.csv-2"
        );
        assert_eq!(file_key("../x", &mut taken), "_.._x");
        assert_eq!(file_key("a b+c.rhai", &mut taken), "a_b_c.rhai");
    }
}
