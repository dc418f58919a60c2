target db { sqlite "bench.db" }
schema s {
  rows 10
  field v: long = unifrom(0, 10)
}
ingest load { into db via sqlite  rows s }
