// The highest rate that meets an SLA: fixed-rate steps from 100/s, doubling until p99 or the
// error rate breaks, then bisecting to 5%; each step at least 1s and 1,000 samples (p99).
target svc { http "http://127.0.0.1:8088" }

run pull {
  against svc.http
  request GET "/query"
  workers 64
  duration 1s
  warmup 500ms
  find max rate from 100/s where p99 < 20ms and error_rate < 0.1%
  expect status 200
}

run pull_capped {
  against svc.http
  request GET "/query"
  workers 16
  warmup 200
  find max rate from 1_000/s where p999 < 50ms up to 50_000/s growth 1.5 resolution 2.5%
}
