target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  sql "SELECT * FROM cpu WHERE hostname = $1"
  binds from csv "support/no-such-params.csv" (hostname text)
}
run r { against db.pg  queries q  count 10 }
