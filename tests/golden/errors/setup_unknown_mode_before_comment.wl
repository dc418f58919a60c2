// The underline stops at the value, not at the end of the comment after it.
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
schema s { rows 100  field a: long = 1 }
ingest load {
  into db via pg
  rows s
  setup trunc   // empty the table first
}
