//! `window(from, to, length)`: a time window that must fit between its bounds.

use super::{gen, Args, Call};
use crate::check::eval::Ev;
use crate::diag::{Code, Diagnostic};
use crate::plan::Gen;
use crate::value::Value;

/// `window(from, to, length)`: a positive length that fits between the two timestamps.
pub(super) fn window(c: &Call, a: &Args) -> Ev<Value> {
    let (ev, scope, span) = (c.ev, c.scope, c.span);
    let from = c.timestamp(a[0])?;
    let to = c.timestamp(a[1])?;
    let le = a[2].expect("required");
    let length = match ev.eval(le, scope)? {
        Value::Duration(d) if d > 0 => d,
        other => return ev.fail(ev.mismatch(le.span, "a positive duration", &other, scope)),
    };
    if to.checked_sub(length).is_none_or(|last| last <= from) {
        return ev.fail(
            Diagnostic::error(
                Code::E0203,
                span,
                format!(
                    "a {} window does not fit between {} and {}",
                    crate::value::fmt_duration(length),
                    crate::value::fmt_timestamp(from),
                    crate::value::fmt_timestamp(to)
                ),
            )
            .label("`to - length` must be after `from`"),
        );
    }
    gen(Gen::Window {
        from: Value::Timestamp(from),
        to: Value::Timestamp(to),
        length: Value::Duration(length),
    })
}
