// `start = 1` is silently replaced by the positional 2 (the plan says seq(2, 1)).
target db { sqlite "bench.db" }
schema s {
  rows 10
  field id: long = seq(start = 1, 2)
}
ingest load { into db via sqlite  rows s }
