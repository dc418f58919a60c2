target db { sqlite "bench.db" }
schema s {
  rows 10
  field v: double = normal(0.0)
}
ingest load { into db via sqlite  rows s }
