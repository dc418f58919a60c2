target db { sqlite "bench.db" }
schema s {
  rows 10
  field a: long = seq()
  field a: double = uniform(0.0, 1.0)
}
ingest load { into db via sqlite  rows s }
