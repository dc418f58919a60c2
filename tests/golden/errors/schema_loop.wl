// A loop's mistakes point into the columns as written, once however many values.
schema s {
  rows 10
  for i in 0..3 {
    field f${i}: long = i + nope
  }
  for j in 0.5 {
    field g${j}: long = 1
  }
  field h${k}: long = 2
}
target db { sqlite "x.db" }
ingest load { into db via sqlite  rows s }
