// A query family: one update per field, YCSB's way of updating one random field, and a
// read-modify-write with its two statements, an expectation per instance and not-found reads.
param fields = 3

target pg {
  pg "postgres://postgres@127.0.0.1:5432/ycsb"
}

query read {
  sql "SELECT * FROM usertable WHERE ycsb_key = $1"
  bind $1 = format("user%d", uniform(0, 1000))
  not found when rows == 0
}

query update for f in 0..fields {
  label "UPDATE field${f}"
  sql "UPDATE usertable SET field${f} = $2 WHERE ycsb_key = $1"
  bind $1 = format("user%d", uniform(0, 1000))
  bind $2 = format("value of field %d", f)
  expect affected == 1
}

query rmw {
  sql "SELECT * FROM usertable WHERE ycsb_key = $1"
  then sql "UPDATE usertable SET field0 = $2 WHERE ycsb_key = $1"
  bind $1 = format("user%d", uniform(0, 1000))
  bind $2 = "new"
  transaction
  expect affected == 1
}

run a {
  against pg.pg
  queries read weight 50, update weight 40, rmw weight 10
  count 100
}
