//! What makes a request's answer a success besides arriving: `expect status` (any 2xx without
//! one) and the `expect body` checks, judged per answer before the response hook.

use crate::net::http::server_message;
use crate::plan::{BodyExpect, Threshold};
use crate::value::Value;

/// `expect status`: the codes that count as success (any 2xx without one).
pub(super) struct StatusSet {
    ranges: Vec<(u16, u16)>,
}

impl StatusSet {
    pub(super) fn of(expects: &[Threshold]) -> StatusSet {
        let mut ranges = Vec::new();
        for t in expects.iter().filter(|t| t.metric == "status") {
            match &t.value {
                Value::List(codes) => {
                    for c in codes {
                        if let Value::Int(c) = c {
                            ranges.push((*c as u16, *c as u16 + 1));
                        }
                    }
                }
                Value::Range(lo, hi) => ranges.push((*lo as u16, *hi as u16)),
                _ => {}
            }
        }
        if ranges.is_empty() {
            ranges.push((200, 300));
        }
        StatusSet { ranges }
    }

    pub(super) fn accepts(&self, code: u16) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= code && code < hi)
    }
}

/// Why a body fails the first `expect body` check it fails, if it does.
pub(super) fn body_failure(checks: &[BodyExpect], body: &[u8]) -> Option<String> {
    for check in checks {
        let first = body.iter().find(|b| !b.is_ascii_whitespace()).copied();
        let ok = match check {
            BodyExpect::Json => serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok(),
            BodyExpect::JsonArray => {
                first == Some(b'[') && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok()
            }
            BodyExpect::JsonObject => {
                first == Some(b'{') && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok()
            }
            BodyExpect::Contains(text) => {
                let needle = text.as_bytes();
                body.windows(needle.len()).any(|w| w == needle)
            }
        };
        if !ok {
            return Some(format!(
                "the answer fails `expect {check}`: {}",
                server_message(body)
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(value: Value) -> Threshold {
        Threshold {
            metric: "status".into(),
            op: "in".into(),
            value,
        }
    }

    #[test]
    fn statuses_default_to_2xx_and_take_codes_lists_and_half_open_ranges() {
        let any2xx = StatusSet::of(&[]);
        assert!(any2xx.accepts(200) && any2xx.accepts(299));
        assert!(!any2xx.accepts(300) && !any2xx.accepts(400) && !any2xx.accepts(199));
        let one = StatusSet::of(&[status(Value::List(vec![Value::Int(200)]))]);
        assert!(one.accepts(200) && !one.accepts(201));
        let set = StatusSet::of(&[status(Value::List(vec![Value::Int(200), Value::Int(404)]))]);
        assert!(set.accepts(404) && !set.accepts(400));
        let range = StatusSet::of(&[status(Value::Range(200, 300))]);
        assert!(range.accepts(204) && !range.accepts(300));
    }

    #[test]
    fn body_checks_name_the_check_that_failed() {
        assert_eq!(body_failure(&[BodyExpect::JsonArray], b" [1, 2]\n"), None);
        let e = body_failure(&[BodyExpect::JsonArray], br#"{"a":1}"#).unwrap();
        assert!(e.contains("expect body json array"), "{e}");
        assert!(body_failure(&[BodyExpect::Json], b"[1,").is_some());
        assert_eq!(
            body_failure(&[BodyExpect::JsonObject], br#"{"a":[]}"#),
            None
        );
        assert!(body_failure(&[BodyExpect::JsonObject], b"[]").is_some());
        let c = [BodyExpect::Contains("\"row\"".into())];
        assert_eq!(body_failure(&c, br#"[{"row":1}]"#), None);
        assert!(body_failure(&c, b"[]").is_some());
    }
}
