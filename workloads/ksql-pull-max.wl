// The highest rate of ksqlDB pull queries one box answers within 20 ms at p90: the findmax
// variant of ksql-pull.wl (same server setup, same hook, same checks of every answer).
//
// The question a ksqlDB capacity study answered by hand ("about 2.5–3 K pull queries per
// box at < 20 ms p90") is asked here directly: fixed-rate steps from 500/s, doubling until p90
// or the error rate breaks, then bisecting to 5%. Each step is open loop (latency from the
// intended send time), lasts at least `step` and 1,000 answers, and has its own 1 s warm-up.
// 128 connections carry up to 6,400 requests/s at 20 ms each: past that the client could not
// keep the schedule, and a step that cannot is said to break the SLA, never counted as met.

workload ksql_pull_max {
  seed 123
  description "the highest ksqlDB pull-query rate with p90 < 20 ms and under 0.1% errors"
}

param orders = 100_000           // ksql-datagen iterations: keys 0 .. orders-1
param ksql_url = "http://127.0.0.1:8088"   // ksqlDB's REST listener (--param ksql_url=...)
param start = 500/s              // the first step's rate
param cap = 20_000/s             // no step above this
param step = 5s                  // each step's least duration (after its warm-up)

target ksql {
  dialect ksqldb
  http "${ksql_url}" {
    headers {
      "Accept":       "application/vnd.ksql.v1+json",
      "Content-Type": "application/vnd.ksql.v1+json",
    }
    timeout 10s
  }
}

hook pull from "ksql-pull.rhai" (request, response)

run pull_max_rate {
  against ksql.http
  request pull.request
  connections 128
  duration step
  warmup 1s
  find max rate from start up to cap where p90 < 20ms and error_rate < 0.1%
  expect status 200          // anything else is an error, never throughput
  expect body json array     // ksqlDB answers a pull query with one JSON array
}
