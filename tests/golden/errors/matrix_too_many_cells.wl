// Every cell is lowered to be checked, so the product of the axes is bounded before it is
// built: these 8e9 cells made `check` allocate until it was killed.
target db { sqlite "bench.db" }
matrix { a in 0..2000  b in 0..2000  c in 0..2000 }
schema s { rows 10  field x: long = a + b + c }
ingest load { into db via sqlite  rows s }
