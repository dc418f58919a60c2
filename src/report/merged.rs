//! `wlrun merge`: the report of a run put together from its shards' run directories, and what
//! the merge found (docs/report-format.md, "Merged runs"). A merged report's cells hold every
//! shard's figures added up; this says which shards went into them and what failed.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergedReport {
    /// The shard count every shard's report names (shard 0's, or the lowest index read).
    pub count: u64,
    /// The plan's digest every merged shard shares (`shard.plan`).
    pub plan: String,
    /// Every directory given, in shard order (then those refused, in the order given).
    pub shards: Vec<MergedShard>,
    /// Why the merged report fails as a whole: a shard missing, given twice, of another run,
    /// failed or interrupted, each naming the shard and its directory. A report with one is
    /// not ok (exit 1).
    pub failures: Vec<String>,
    /// Per phase, in the order the shards ran them: what each shard's barriers measured.
    pub phases: Vec<MergedPhase>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergedShard {
    /// The index the shard's report names; `None` for a directory that says none.
    pub index: Option<u64>,
    /// The directory as given to `wlrun merge`.
    pub dir: String,
    /// Its figures are in the merged cells (false: refused, see `failures`).
    pub merged: bool,
    /// The run was killed: no report.json, its report rebuilt from its time series.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub killed: bool,
    /// `ok`, or what was wrong with this shard (its failure, or why it was refused).
    pub status: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergedPhase {
    pub cell: usize,
    pub phase: String,
    /// One per merged shard, in shard order.
    pub shards: Vec<ShardSkew>,
}

/// What one shard's report says of a phase's start barrier (`shard.phases[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardSkew {
    pub index: u64,
    /// The spread of the shards' starts, as shard 0 measured it (the same in every shard's
    /// report); absent when the shard's report has none.
    pub start_skew_ms: Option<f64>,
    pub skew_error_ms: Option<f64>,
    /// How long this shard waited at the start barrier.
    pub waited_start_ms: Option<f64>,
}

impl MergedReport {
    /// The human lines of the merge: which shards, the start skew, and why it fails.
    pub fn lines(&self) -> String {
        let merged: Vec<&MergedShard> = self.shards.iter().filter(|s| s.merged).collect();
        let mut out = format!(
            "merged {} of {} shard{} (plan {}):",
            merged.len(),
            self.count,
            if self.count == 1 { "" } else { "s" },
            self.plan
        );
        let listed: Vec<String> = self
            .shards
            .iter()
            .map(|s| {
                let index = s.index.map_or("?".to_string(), |i| i.to_string());
                let refused = if s.merged { "" } else { " (refused)" };
                format!(" shard {index} from {}{refused}", s.dir)
            })
            .collect();
        out += &listed.join(",");
        out.push('\n');
        let skews: Vec<f64> = self
            .phases
            .iter()
            .filter_map(|p| {
                p.shards
                    .iter()
                    .filter_map(|s| s.start_skew_ms)
                    .reduce(f64::max)
            })
            .collect();
        if let Some(max) = skews.iter().copied().reduce(f64::max) {
            out += &format!(
                "start skew at most {max:.2} ms over {} phase start{}\n",
                skews.len(),
                if skews.len() == 1 { "" } else { "s" }
            );
        }
        if !self.failures.is_empty() {
            out += "the merged report FAILS:\n";
            for f in &self.failures {
                out += &format!("  {f}\n");
            }
        }
        out
    }
}
