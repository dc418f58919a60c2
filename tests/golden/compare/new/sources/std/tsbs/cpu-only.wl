// TSBS cpu-only: the data set of `tsbs_generate_data --use-case=cpu-only`.
//
// Reproduces the Time Series Benchmark Suite generator (timescale/tsbs, and the identical logic in
// the questdb/tsbs fork): one row per host per interval, 10 string tags fixed per host and 10
// integer cpu gauges that each follow their own clamped random walk.
//
//   rows     = hosts x floor((end - start) / interval)
//              defaults: 4,000 hosts x 8,640 epochs = 34,560,000 rows (345,600,000 metrics)
//   ordering = epoch-major, host-minor: every host once per interval, in id order
//   times    = start, start + interval, ... ; `end` is exclusive (last row at end - interval)
//
// Import it with the scale and time range you want:
//
//   import "std/tsbs/cpu-only.wl" as tsbs (hosts = 100000, end = 2016-01-03T00:00:00Z)
//   ingest load { into questdb via ilp_tcp  rows tsbs.cpu  batch 10_000 rows }

param hosts    = 4000                    // tsbs --scale
param start    = 2016-01-01T00:00:00Z    // tsbs --timestamp-start
param end      = 2016-01-02T00:00:00Z    // tsbs --timestamp-end (exclusive)
param interval = 10s                     // tsbs --log-interval

schema cpu {
  table "cpu"

  // The series key: `host_<id>` for id 0..hosts-1. TSBS does not zero-pad host ids.
  series hostname: symbol = format("host_%d", n) for n in 0..hosts

  // The other 9 tags, in the order TSBS emits them. Every tag is drawn once when the host is
  // created and never changes. In the ILP output they are tags, so QuestDB makes them SYMBOLs.
  tag region: symbol = pick([
    "us-east-1", "us-west-1", "us-west-2", "eu-west-1", "eu-central-1",
    "ap-southeast-1", "ap-southeast-2", "ap-northeast-1", "sa-east-1",
  ]) per series

  // The datacenter is an availability zone of the host's own region, uniform within that region
  // (so it is not uniform over all 24 zones).
  tag datacenter: symbol = pick_by(region, {
    "us-east-1":      ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"],
    "us-west-1":      ["us-west-1a", "us-west-1b"],
    "us-west-2":      ["us-west-2a", "us-west-2b", "us-west-2c"],
    "eu-west-1":      ["eu-west-1a", "eu-west-1b", "eu-west-1c"],
    "eu-central-1":   ["eu-central-1a", "eu-central-1b"],
    "ap-southeast-1": ["ap-southeast-1a", "ap-southeast-1b"],
    "ap-southeast-2": ["ap-southeast-2a", "ap-southeast-2b"],
    "ap-northeast-1": ["ap-northeast-1a", "ap-northeast-1c"],
    "sa-east-1":      ["sa-east-1a", "sa-east-1b", "sa-east-1c"],
  }) per series

  // Numeric-looking tags are decimal strings of a uniform integer: rack "0".."99",
  // service "0".."19", service_version "0" or "1".
  tag rack:                symbol = string(uniform(0, 100))                                per series
  tag os:                  symbol = pick(["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"]) per series
  tag arch:                symbol = pick(["x64", "x86"])                                   per series
  tag team:                symbol = pick(["SF", "NYC", "LON", "CHI"])                      per series
  tag service:             symbol = string(uniform(0, 20))                                 per series
  tag service_version:     symbol = string(uniform(0, 2))                                  per series
  tag service_environment: symbol = pick(["production", "staging", "test"])                per series

  // The 10 cpu gauges. Each one, for each host, is an independent random walk: the first row
  // carries the initial state U[0, 100), every later row adds one N(0, 1) step and clamps the
  // state to [0, 100]. The emitted value is the state truncated toward zero (TSBS writes
  // int64(state)), so values are whole numbers 0..100 and travel as ILP integers (`58i`).
  field usage_user:       long = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)
  field usage_system:     long = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)
  field usage_idle:       long = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)
  field usage_nice:       long = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)
  field usage_iowait:     long = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)
  field usage_irq:        long = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)
  field usage_softirq:    long = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)
  field usage_steal:      long = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)
  field usage_guest:      long = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)
  field usage_guest_nice: long = walk(uniform(0.0, 100.0), normal(0.0, 1.0), clamp = 0..100)

  // One reading per host every `interval`, from `start` up to but excluding `end`. TSBS writes
  // nanosecond timestamps; QuestDB stores the designated timestamp in microseconds.
  timestamp timestamp: timestamp(ns) = every interval from start to end
}
