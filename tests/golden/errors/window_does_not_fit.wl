target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  sql "SELECT * FROM cpu WHERE ts >= $1 AND ts < $2"
  let w = window(2016-01-01T00:00:00Z, 2016-01-01T01:00:00Z, 2h)
  bind $1 = w.start
  bind $2 = w.end
}
run r { against db.pg  queries q  count 10 }
