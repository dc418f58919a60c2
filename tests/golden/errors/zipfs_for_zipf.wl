// A name that adds a suffix to a built-in function suggests it.
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
schema s { rows 100  field a: long = zipfs(100) }
ingest load { into db via pg  rows s }
