// Two swapped letters are one slip, close enough to suggest.
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  sql "SELECT $1"
  bnid $1 = 1
}
