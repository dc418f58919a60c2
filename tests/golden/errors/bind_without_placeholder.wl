target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  sql "SELECT * FROM cpu WHERE usage_user > $1"
  bind $1 = uniform(0, 100)
  bind $2 = uniform(0, 100)
}
run r { against db.pg  queries q  count 10 }
