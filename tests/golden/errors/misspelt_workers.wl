// `workers N` is named by its shape in the expected list; it is still suggested.
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
schema s { rows 100  field a: long = 1 }
ingest load {
  into db via pg
  rows s
  wokers 4
}
