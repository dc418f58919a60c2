target db { sqlite "bench.db" }
matrix {
  workers in [1, 4, 1]
}
schema s { rows 10  field a: long = 1 }
ingest load { into db via sqlite  rows s  workers workers }
