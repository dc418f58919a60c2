target db { sqlite "bench.db" }
schema s {
  rows 10
  field a: long = [1, 2]
}
ingest load { into db via sqlite  rows s }
