// sample() draws from a series key or from a column whose values are known when checking
// (`pick`, `weighted`, `pick_by`, a constant); a walk's values are not.
import "std/tsbs/cpu-only.wl" as tsbs (hosts = 10)
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
query q {
  sql "SELECT * FROM cpu WHERE usage_user IN $1"
  bind $1 = sample(tsbs.cpu.usage_user, 2)
}
run r { against db.pg  queries q  count 10 }
