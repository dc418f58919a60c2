//! The placeholders of a request template, read by the lowering (which checks them) and by the
//! runner (which cuts the text at them).

/// Every `$DIGITS` of a request's path or body, quotes or not (a JSON body's values sit in
/// quotes), as (its number, saturated at `u64::MAX`, and the token).
pub fn template_placeholders(text: &str) -> Vec<(u64, &str)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            let start = i;
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let n = text[start + 1..i].parse::<u64>().unwrap_or(u64::MAX);
            out.push((n, &text[start..i]));
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_inside_quotes_count_and_every_number_is_kept() {
        let found = template_placeholders(
            r#"{"k":"$1","v":$12,"x":"$0 $","y":"$99999999999999999999999"}"#,
        );
        assert_eq!(
            found,
            vec![
                (1, "$1"),
                (12, "$12"),
                (0, "$0"),
                (u64::MAX, "$99999999999999999999999")
            ]
        );
    }
}
