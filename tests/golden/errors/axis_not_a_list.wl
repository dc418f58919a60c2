target db { sqlite "bench.db" }
matrix {
  workers in 4
}
schema s { rows 10  field a: long = 1 }
ingest load { into db via sqlite  rows s  workers workers }
