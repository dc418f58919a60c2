target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  sql "SELECT * FROM cpu WHERE usage_user > $1 AND usage_user < $2"
  bind $1 = $2 - 10
  bind $2 = uniform(10, 100)
}
run r { against db.pg  queries q  count 10 }
