// Missing binds and gaps are one diagnostic each, as ranges, however many numbers they cover.
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  sql "SELECT $1, $2, $3, $4, $5, $7, $8, $9000"
  bind $1 = 1
}
run r { against db.pg  queries q  count 10 }
