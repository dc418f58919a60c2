target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  let x = uniform(0, 10)
  let x = uniform(0, 20)
  sql "SELECT $1"
  bind $1 = x
}
run r {
  against db.pg
  queries q
  count 10
}
