target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }

query q {
  sql "SELECT * FROM cpu WHERE ts >= $1"
  let w = window(2016-01-01T00:00:00Z, 2016-01-02T00:00:00Z, 1h)
  bind $1 = w.middle
}

run r { against db.pg  queries q  count 10 }
