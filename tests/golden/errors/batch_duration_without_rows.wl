// A batch is a row count followed by `rows`: the missing word is reported at the value, not at
// the next clause.
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
schema s { rows 100  field a: long = 1 }
ingest load {
  into db via pg
  rows s
  batch 10s
  workers 1
}
