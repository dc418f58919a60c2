// 10,000 cells x 1 phase: checks
target db { null }
schema s { rows 1  field a: long = 1 }
matrix {
  x in 0..100
  y in 0..100
}
ingest l0 { into db via null  rows s  workers x + y + 1 }
