// The underline ends at the closing quote: `//` inside the string is text, the one after it a
// comment.
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
schema s { rows 100  field a: long = 1 }
ingest load {
  into db via pg
  rows s
  teardown "http://example.com/drop"   // not a teardown mode
}
