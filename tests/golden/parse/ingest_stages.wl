// A staged ingest: a step, a linear ramp of the row rate, and a step with its own warm-up.
ingest staged {
  into questdb via ilp_http
  rows tsbs.cpu
  batch 1_000 rows
  workers 4
  stage 10s rate 10_000/s
  stage 20s rate 10_000/s to 50_000/s
  stage 30s rate 50_000/s warmup 5s
}
