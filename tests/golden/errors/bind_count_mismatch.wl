target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  sql "SELECT * FROM cpu WHERE usage_user > $1 AND usage_system > $2"
  bind $1 = uniform(0, 100)
}
run r { against db.pg  queries q  count 10 }
