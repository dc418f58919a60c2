// 10,000 cells x 3 phases: every phase of every cell is lowered when checking.
target db { null }
schema s { rows 1  field a: long = 1 }
matrix {
  x in 0..100
  y in 0..100
}
ingest load0 { into db via null  rows s  workers x + y + 1 }
ingest load1 { into db via null  rows s  workers x + y + 1 }
ingest load2 { into db via null  rows s  workers x + y + 1 }
