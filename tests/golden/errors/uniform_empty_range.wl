target db { sqlite "bench.db" }
schema s {
  rows 10
  field v: long = uniform(100, 10)
}
ingest load { into db via sqlite  rows s }
