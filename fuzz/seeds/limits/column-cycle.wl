// a cycle of columns: E0208 once, with its chain
target db { null }
schema s {
  rows 10
  field a: long = c + 1
  field b: long = a + 1
  field c: long = b + 1
}
ingest load { into db via null  rows s }
