// Mistakes in a query family point into the query as written, once however many members.
target pg { pg "postgres://postgres@127.0.0.1:5432/ycsb" }
query update for f in 0..3 {
  sql "UPDATE usertable SET field${f} = $2 WHERE ycsb_key = $1"
  bind $1 = uniform(0, 10)
  bind $2 = fieldz
}
query bad for f in 0.5 {
  sql "SELECT 1"
}
run a {
  against pg.pg
  queries update, bad
  count 10
}
