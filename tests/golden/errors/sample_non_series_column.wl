import "std/tsbs/cpu-only.wl" as tsbs (hosts = 10)
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  sql "SELECT * FROM cpu WHERE region IN $1"
  bind $1 = sample(tsbs.cpu.region, 2)
}
run r { against db.pg  queries q  count 10 }
