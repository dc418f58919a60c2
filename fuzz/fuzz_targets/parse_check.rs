//! Feeds arbitrary bytes, lossily decoded, through parse and check (and lower, when the input
//! checks). Any panic is a bug: turn the crasher into a `tests/golden/errors` case.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wlrun::check::Options;
use wlrun::compile::check_text;

fuzz_target!(|data: &[u8]| {
    // Bound pest's backtracking so a pathological input shows up as a slow case, not a hang.
    pest::set_call_limit(std::num::NonZeroUsize::new(5_000_000));
    let text = String::from_utf8_lossy(data);
    let out = check_text("fuzz.wl", &text, &Options::default());
    let _ = wlrun::diag::render_all(&out.map, &out.diagnostics, wlrun::diag::Style::Plain);
    if let Some(checked) = &out.checked {
        let plan = wlrun::lower::lower(checked);
        let _ = wlrun::plan::listing(&plan);
    }
});
