// Independent mistakes in one round: URLs with an unknown scheme or that do not parse hid the
// runs' unknown query and the string passed as `count`, and the ingest's unknown schema and
// string worker count.
target db {
  pg   "postgress://postgres@127.0.0.1:5432/postgres"
  http "http://127.0.0.1:abc"
}
query q { sql "SELECT 1" }
run by_pg { against db.pg  queries nosuch  count 10 }
run by_http { against db.http  queries q  count "100" }
ingest load { into db via pg  rows nosuch_schema  workers "4" }
