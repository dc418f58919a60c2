// `$0` and `$4294967296` are not placeholders a bind can fill; the SQL is accepted with none.
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  sql "SELECT * FROM cpu WHERE a = $0 AND b = $4294967296"
}
run r { against db.pg  queries q  count 10 }
