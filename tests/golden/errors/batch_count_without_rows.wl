// `batch 1000` without `rows` is reported at the value, not at the next clause.
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
schema s { rows 100  field a: long = 1 }
ingest load {
  into db via pg
  rows s
  batch 1000
  workers 1
}
