import "std/tsbs/cpu-only.wl" as tsbs (hosts = 4)
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  sql "SELECT * FROM cpu WHERE hostname IN $1"
  bind $1 = sample(tsbs.cpu.hostname, 8)
}
run r { against db.pg  queries q  count 10 }
