//! "Did you mean" for every stage: the closest candidate to a misspelt word. Parsing uses it
//! for keywords and checking for names, so it lives with the diagnostics both produce.

/// The closest candidate within a small edit distance, for "did you mean" notes.
pub fn suggest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c == word {
            continue;
        }
        // A prefix of three letters or more (`proto` for `protocol`) counts as close, and so
        // does a word that only adds a suffix to a candidate of four or more (`zipfian` for
        // `zipf`): the distance alone would call both far.
        let d = if (word.len() >= 3 && c.starts_with(word)) || (c.len() >= 4 && word.starts_with(c))
        {
            1
        } else {
            edit_distance(word, c)
        };
        let limit = (word.len().max(c.len()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c.to_string())
}

/// Levenshtein distance where swapping two neighbouring letters (`bnid`, `wokrers`) costs one
/// edit, as the typing slip it is, not two (optimal string alignment).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Rows i-2, i-1 and i of the table.
    let mut before: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 0..a.len() {
        let mut cur = vec![i + 1; b.len() + 1];
        for j in 0..b.len() {
            let mut d = (prev[j] + usize::from(a[i] != b[j]))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
            if i > 0 && j > 0 && a[i] == b[j - 1] && a[i - 1] == b[j] {
                d = d.min(before[j - 1] + 1);
            }
            cur[j + 1] = d;
        }
        before = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}
