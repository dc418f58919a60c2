// Every query allocates a sample's values and writes them into its SQL as a list, so `k` is
// bounded: a million values per query checked ok before.
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
schema cpu {
  series hostname: varchar = format("host_%d", i) for i in 0..2_000_000
  field usage: double = uniform(0, 100)
  rows 10
}
query q {
  sql "SELECT * FROM cpu WHERE hostname IN $1"
  bind $1 = sample(cpu.hostname, 1_000_000)
}
run r { against db.pg  queries q  count 10 }
