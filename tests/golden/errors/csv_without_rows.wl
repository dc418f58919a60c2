target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  sql "SELECT * FROM cpu WHERE hostname = $1 AND ts >= $2"
  binds from csv "support/header-only.csv" (hostname text, start_time timestamp)
}
run r { against db.pg  queries q  count 10 }
