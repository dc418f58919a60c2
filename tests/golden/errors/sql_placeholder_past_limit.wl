// A placeholder number must not size anything: `$99999999` made `check` allocate until the
// kernel killed it, `$429496` gave 429,497 diagnostics. Numbers past $65535 are refused.
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  sql "SELECT * FROM cpu WHERE a = $99999999 OR b = $429496"
}
run r { against db.pg  queries q  count 10 }
