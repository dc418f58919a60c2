// A window length that underflows `to - length` (the checker panicked).
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  sql "SELECT * FROM cpu WHERE ts >= $1"
  let w = window(1677-09-22T00:00:01Z, 1677-09-22T00:00:02Z, 52w)
  bind $1 = w.start
}
run r { against db.pg  queries q  count 10 }
